package test

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/healthroute/healthroute/internal/coretest"
	"github.com/healthroute/healthroute/view"
)

// probeLog is an HTTP endpoint on loopback that answers OK (503 to the checkers
// failFrom names) and logs which checker (named in the probe's User-Agent) probed
// it when.
type probeLog struct {
	*httptest.Server
	mu      sync.Mutex
	probes  []probeAt
	failing []string
}

type probeAt struct {
	checker string
	at      time.Time
}

func newProbeLog(t *testing.T) *probeLog {
	p := &probeLog{}
	p.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ua := r.Header.Get("User-Agent")
		name := ua
		if i := strings.LastIndex(ua, "(checker "); i >= 0 {
			name = strings.TrimSuffix(ua[i+len("(checker "):], ")")
		}
		p.mu.Lock()
		p.probes = append(p.probes, probeAt{name, time.Now()})
		fail := slices.Contains(p.failing, name)
		p.mu.Unlock()
		if fail {
			http.Error(w, "down for you", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprint(w, "OK")
	}))
	t.Cleanup(p.Close)
	return p
}

// failFrom makes the probes of checkers fail from now on (none: every probe passes).
func (p *probeLog) failFrom(checkers ...string) {
	p.mu.Lock()
	p.failing = slices.Clone(checkers)
	p.mu.Unlock()
}

// since returns the probes from t on, per checker.
func (p *probeLog) since(t time.Time) map[string]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := map[string]int{}
	for _, pr := range p.probes {
		if !pr.at.Before(t) {
			out[pr.checker]++
		}
	}
	return out
}

// lastFrom returns when the last probe of any of checkers arrived.
func (p *probeLog) lastFrom(checkers []string) time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	var last time.Time
	for _, pr := range p.probes {
		if slices.Contains(checkers, pr.checker) && pr.at.After(last) {
			last = pr.at
		}
	}
	return last
}

func total(by map[string]int) int {
	n := 0
	for _, v := range by {
		n += v
	}
	return n
}

// measure returns the probes p receives during a window of d: a measuring window,
// not a wait for an event.
func (p *probeLog) measure(d time.Duration) map[string]int {
	start := time.Now()
	w := time.NewTimer(d)
	<-w.C
	return p.since(start)
}

// placementRegion puts the members in regions a, b and c in turn.
func placementRegion(i int) string { return string(rune('a' + i%3)) }

// placementFleet starts n members in regions a, b and c (default fleet timers), with
// check web on 3 checkers and check ab probed from regions a and b, both every
// second, and waits until every member places web on the same 3 members.
func placementFleet(t *testing.T, n int, web, ab string) []*fleetMember {
	t.Helper()
	coretest.Binary(t) // build before timing anything
	ms, keyFile := newFleetMembers(t, n)
	nowhere := coretest.ClosedPort(t) // check nowhere's regions have no member: never probed
	for i, m := range ms {
		m.corefile = m.fleetCorefile(ms, keyFile, "region "+placementRegion(i), fmt.Sprintf(`check web http %s/ {
			interval 1s
			failure_threshold 1
			checkers 3
		}
		check ab http %s/ {
			interval 1s
			failure_threshold 1
			regions a b
		}
		check nowhere tcp %s {
			interval 1s
			regions d
		}
		record www.example.org. failover {
			primary   A 192.0.2.1 check web
			secondary A 198.51.100.1
		}
		record ab.example.org. failover {
			primary   A 192.0.2.2 check ab
			secondary A 198.51.100.2
		}
		record nowhere.example.org. failover {
			primary   A 192.0.2.3 check nowhere
			secondary A 198.51.100.3
		}`, web, ab, nowhere))
	}
	for _, m := range ms {
		m.start(t)
	}
	return ms
}

// checkView is m's /v1/checks view of check name's fleet arithmetic, nil when the
// API does not answer.
func (m *fleetMember) checkView(name string) *view.Fleet {
	c := http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get(fmt.Sprintf("http://127.0.0.1:%d/v1/checks", m.api))
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	var v struct{ Checks []view.Check }
	if json.NewDecoder(resp.Body).Decode(&v) != nil {
		return nil
	}
	for _, c := range v.Checks {
		if c.Name == name {
			return c.Fleet
		}
	}
	return nil
}

// placedOn returns the checkers of web every member of ms agrees on, with all 3 of
// them counted healthy, or nil.
func placedOn(ms []*fleetMember) []string {
	var first []string
	for i, m := range ms {
		v := m.checkView("web")
		if v == nil || len(v.Checkers) != 3 || v.Total != 3 || v.Healthy != 3 {
			return nil
		}
		if i == 0 {
			first = v.Checkers
		} else if !slices.Equal(v.Checkers, first) {
			return nil
		}
	}
	return first
}

func placementDiag(ms []*fleetMember, logs ...*probeLog) func() string {
	return func() string {
		var b strings.Builder
		for _, m := range ms {
			if v := m.checkView("web"); v != nil {
				fmt.Fprintf(&b, "%s places web on %v, %d of %d healthy (%s)\n", m.name, v.Checkers, v.Healthy, v.Total, v.Decision)
			} else {
				fmt.Fprintf(&b, "%s: no view\n", m.name)
			}
		}
		for i, l := range logs {
			fmt.Fprintf(&b, "endpoint %d, last 2 s: %v\n", i, l.since(time.Now().Add(-2*time.Second)))
		}
		return b.String()
	}
}

// perInterval says whether probes over a window of secs 1-s intervals average 3
// per interval, give or take 1.
func perInterval(probes map[string]int, secs int) bool {
	n := total(probes)
	return n >= 2*secs && n <= 4*secs
}

// TestFleetPlacementEightMembers runs 8 CoreDNS processes in regions a, b and c
// with the fleet block users write (default timers: WAN profile, heartbeat 1 s,
// suspicion 5 s):
//   - check web, checkers 3, interval 1 s: its endpoint gets 3 probes an interval
//     (±1) from the 3 members every member places it on, not 8;
//   - check ab, regions a b: probed by the 6 members of regions a and b only;
//   - SIGKILL two of web's checkers: within suspicion + 2 intervals (7 s) the
//     endpoint gets probes from 3 live checkers again, 3 an interval, and no member
//     left answers anything but the primary meanwhile.
func TestFleetPlacementEightMembers(t *testing.T) {
	const suspicion, interval = 5 * time.Second, time.Second
	web, ab := newProbeLog(t), newProbeLog(t)
	ms := placementFleet(t, 8, web.URL, ab.URL)
	diag := placementDiag(ms, web, ab)
	var checkers []string
	fleetWait(t, 60*time.Second, "every member places web on the same 3 checkers and counts their 3 reports",
		func() bool { checkers = placedOn(ms); return checkers != nil }, diag)

	got := web.measure(5 * interval)
	if !perInterval(got, 5) || len(got) != 3 {
		t.Errorf("web's endpoint got %v in 5 intervals (%d), want 3 an interval (±1) from %v", got, total(got), checkers)
	}
	for name := range got {
		if !slices.Contains(checkers, name) {
			t.Errorf("%s probed web, not one of its checkers %v", name, checkers)
		}
	}
	var inAB []string
	for i, m := range ms {
		if r := placementRegion(i); r == "a" || r == "b" {
			inAB = append(inAB, m.name)
		}
	}
	fromAB := ab.since(time.Now().Add(-3 * interval))
	if names := slices.Sorted(maps.Keys(fromAB)); !slices.Equal(names, inAB) {
		t.Errorf("ab probed by %v in 3 intervals, want the members of regions a and b: %v", names, inAB)
	}
	checkCheckerRows(t, ms, checkers)
	// A region no member is in: each member says so once, at the check's Corefile line.
	for _, m := range ms {
		fleetWait(t, 20*time.Second, m.name+" warns that no member is in check nowhere's regions", func() bool {
			return strings.Contains(m.srv.Output(), "check nowhere: regions d: no member this one reaches is in them")
		}, m.srv.Output)
	}
	checkAssignedGauges(t, ms, checkers, diag)
	reassigned := map[string]float64{}
	for _, m := range ms {
		reassigned[m.name] = metricValue(m.scrapeMetrics(t), "coredns_healthroute_fleet_reassignments_total", nil)
	}

	killed, left := splitCheckers(ms, checkers, 2)
	samples := sampleAnswersBut(left, fleetSecondary, false)
	kill := time.Now()
	for _, m := range killed {
		m.kill(t)
	}
	dead := func(name string) bool {
		return slices.ContainsFunc(killed, func(m *fleetMember) bool { return m.name == name })
	}
	fleetWait(t, 30*time.Second, "3 live checkers probe web again", func() bool {
		live := 0
		for name := range web.since(time.Now().Add(-interval - 200*time.Millisecond)) {
			if !dead(name) {
				live++
			}
		}
		return live == 3
	}, diag)
	took := time.Since(kill)
	t.Logf("2 of 3 checkers killed: 3 live checkers probe again %s after the SIGKILL", took.Round(time.Millisecond))
	if took > suspicion+2*interval {
		t.Errorf("3 live checkers probed again %s after the SIGKILL, want within suspicion + 2 intervals (%s)", took, suspicion+2*interval)
	}
	got = web.measure(3 * interval)
	if !perInterval(got, 3) || len(got) != 3 {
		t.Errorf("after the takeover web's endpoint got %v in 3 intervals (%d), want 3 an interval (±1) from 3 checkers", got, total(got))
	}
	fleetWait(t, 20*time.Second, "the members left agree on 3 live checkers", func() bool {
		c := placedOn(left)
		return c != nil && !slices.ContainsFunc(c, dead)
	}, diag)
	for _, m := range left {
		if n := metricValue(m.scrapeMetrics(t), "coredns_healthroute_fleet_reassignments_total", nil); n <= reassigned[m.name] {
			t.Errorf("%s counts %v reassignments after 2 checkers died, want more than the %v before", m.name, n, reassigned[m.name])
		}
	}
	if wrong, summary := samples.stop(); wrong > 0 {
		t.Errorf("%d answers with the secondary while checkers were replaced: %s", wrong, summary)
	}
}

// checkCheckerRows holds the per-checker view of web on the first member: every
// checker's row names its region and address, is counted and has a last report,
// and the status page writes them.
func checkCheckerRows(t *testing.T, ms []*fleetMember, checkers []string) {
	t.Helper()
	v := ms[0].checkView("web")
	regionOf, gossipOf := map[string]string{}, map[string]int{}
	for i, m := range ms {
		regionOf[m.name], gossipOf[m.name] = placementRegion(i), m.gossip
	}
	rows := 0
	for _, r := range v.Members {
		if !r.Checker {
			continue
		}
		rows++
		if r.Region != regionOf[r.Member] || r.Address == "" || !r.Counted || r.Observed.IsZero() {
			t.Errorf("%s's row of checker %s: %+v, want region %s, an address, counted, a last report", ms[0].name, r.Member, r, regionOf[r.Member])
		}
	}
	if rows != 3 {
		t.Errorf("%s's view of web has %d checker rows, want 3: %+v", ms[0].name, rows, v.Members)
	}
	_, page := httpDo(t, http.MethodGet, fmt.Sprintf("http://127.0.0.1:%d/", ms[0].api), "", "")
	if want := fmt.Sprintf("%s [%s] 127.0.0.1:%d: up, last report ", checkers[0], regionOf[checkers[0]], gossipOf[checkers[0]]); !strings.Contains(page, want) {
		t.Errorf("the status page does not write %q", want)
	}
}

// checkAssignedGauges waits until each member's assigned checks gauge says what it
// probes: web on its 3 checkers, ab on the 6 members of regions a and b.
func checkAssignedGauges(t *testing.T, ms []*fleetMember, checkers []string, diag func() string) {
	t.Helper()
	fleetWait(t, 10*time.Second, "each member's assigned checks gauge says what it probes", func() bool {
		for i, m := range ms {
			want := 0.0
			if slices.Contains(checkers, m.name) {
				want++
			}
			if r := placementRegion(i); r == "a" || r == "b" {
				want++
			}
			if metricValue(m.scrapeMetrics(t), "coredns_healthroute_fleet_assigned_checks", nil) != want {
				return false
			}
		}
		return true
	}, diag)
}

// scrapeMetrics returns m's Prometheus metrics.
func (m *fleetMember) scrapeMetrics(t *testing.T) map[string]*dto.MetricFamily {
	fams, _ := scrape(t, fmt.Sprintf("http://127.0.0.1:%d/metrics", m.metrics))
	return fams
}
