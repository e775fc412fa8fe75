package test

import (
	"cmp"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/healthroute/healthroute/internal/coretest"
)

// fleetEndpoint is an HTTP endpoint on loopback that fails the probes of one
// checker (named in the User-Agent the probes carry) and notes when each checker's
// first probe since the last reset arrived.
type fleetEndpoint struct {
	*httptest.Server
	failFor string
	down    atomic.Bool // fail every checker's probes

	mu    sync.Mutex
	first map[string]time.Time // checker name -> first probe since reset
}

func newFleetEndpoint(t testing.TB, failFor string) *fleetEndpoint {
	e := &fleetEndpoint{failFor: failFor, first: map[string]time.Time{}}
	e.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ua := r.Header.Get("User-Agent")
		name := ""
		if i := strings.LastIndex(ua, "(checker "); i >= 0 {
			name = strings.TrimSuffix(ua[i+len("(checker "):], ")")
		}
		e.mu.Lock()
		if _, ok := e.first[name]; !ok {
			e.first[name] = time.Now()
		}
		e.mu.Unlock()
		if name == e.failFor || e.down.Load() {
			http.Error(w, "down for you", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprint(w, "OK")
	}))
	t.Cleanup(e.Close)
	return e
}

// firstProbe returns when checker's first probe since it was forgotten arrived.
func (e *fleetEndpoint) firstProbe(checker string) (time.Time, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	at, ok := e.first[checker]
	return at, ok
}

func (e *fleetEndpoint) forget(checker string) {
	e.mu.Lock()
	delete(e.first, checker)
	e.mu.Unlock()
}

// fleetMember is one CoreDNS process of a fleet test and the Corefile it runs.
type fleetMember struct {
	name                      string
	dns, api, gossip, metrics int
	gossipIP                  string // the IP its gossip binds; "": 127.0.0.1
	advertise                 string // its advertise line's ADDRESS:PORT; "": none
	corefile                  string
	srv                       *coretest.Server
}

// bindAddr is m's gossip bind address.
func (m *fleetMember) bindAddr() string {
	return fmt.Sprintf("%s:%d", cmp.Or(m.gossipIP, "127.0.0.1"), m.gossip)
}

// reachAddr is where the other members reach m: its advertised address, else its
// bind address.
func (m *fleetMember) reachAddr() string { return cmp.Or(m.advertise, m.bindAddr()) }

// fleetMembers lays out n members joining each other with the fleet block users
// write (default timers), each probing url every second.
func fleetMembers(t testing.TB, n int, url string) []*fleetMember {
	t.Helper()
	return fleetMembersProbing(t, n, url, "interval 1s\n\t\t\tfailure_threshold 1")
}

// fleetMembersProbing is fleetMembers with the check's settings (interval,
// failure_threshold lines) given.
func fleetMembersProbing(t testing.TB, n int, url, settings string) []*fleetMember {
	t.Helper()
	ms, keyFile := newFleetMembers(t, n)
	for _, m := range ms {
		m.corefile = m.fleetCorefile(ms, keyFile, "", fmt.Sprintf(`check web http %s/ {
			%s
		}
		record www.example.org. failover {
			primary   A 192.0.2.1 check web
			secondary A 198.51.100.1
		}`, url, settings))
	}
	return ms
}

// fleetCorefile is m's Corefile: example.org on its DNS port, prometheus, and a
// healthroute block with its api and a fleet block (with m's advertise line, if
// any) joining ms with keyFile (plus the lines fleetExtra), holding body (checks
// and records).
func (m *fleetMember) fleetCorefile(ms []*fleetMember, keyFile, fleetExtra, body string) string {
	if m.advertise != "" {
		fleetExtra = "advertise " + m.advertise + "\n\t\t\t" + fleetExtra
	}
	return fmt.Sprintf(`example.org:%d {
	bind 127.0.0.1
	prometheus 127.0.0.1:%d
	healthroute {
		api 127.0.0.1:%d
		fleet {
			bind %s
			join %s
			name %s
			key_file %s
			%s
		}
		%s
	}
}`, m.dns, m.metrics, m.api, m.bindAddr(), m.join(ms), m.name, keyFile, fleetExtra, body)
}

// newFleetMembers names n members dns-a, dns-b... with free ports, and writes
// their gossip key; the caller writes their Corefiles.
func newFleetMembers(t testing.TB, n int) ([]*fleetMember, string) {
	t.Helper()
	key := make([]byte, 32)
	rand.Read(key)
	keyFile := filepath.Join(t.TempDir(), "gossip.key")
	if err := os.WriteFile(keyFile, []byte(base64.StdEncoding.EncodeToString(key)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ms := make([]*fleetMember, n)
	for i := range ms {
		ms[i] = &fleetMember{name: fmt.Sprintf("dns-%c", 'a'+i), dns: coretest.FreePort(t), api: coretest.FreePort(t), gossip: coretest.FreePort(t),
			metrics: coretest.FreePort(t)}
	}
	return ms, keyFile
}

// join is m's join line: every other member's gossip address, as it is reached.
func (m *fleetMember) join(ms []*fleetMember) string {
	var join []string
	for _, o := range ms {
		if o != m {
			join = append(join, o.reachAddr())
		}
	}
	return strings.Join(join, " ")
}

func (m *fleetMember) start(t testing.TB) {
	t.Helper()
	m.srv = coretest.Start(t, m.corefile, m.dns, "www.example.org")
}

// counted returns how many members' reports of the check count on m, and their
// names; -1 when the API does not answer.
func (m *fleetMember) counted() (int, string) {
	c := http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get(fmt.Sprintf("http://127.0.0.1:%d/v1/checks", m.api))
	if err != nil {
		return -1, err.Error()
	}
	defer resp.Body.Close()
	var v struct {
		Checks []struct {
			Fleet *struct {
				Total   int `json:"total"`
				Members []struct {
					Member  string `json:"member"`
					Counted bool   `json:"counted"`
				} `json:"members"`
			} `json:"fleet"`
		} `json:"checks"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil || len(v.Checks) != 1 || v.Checks[0].Fleet == nil {
		return -1, fmt.Sprintf("unexpected /v1/checks: %v", err)
	}
	var names []string
	for _, r := range v.Checks[0].Fleet.Members {
		if r.Counted {
			names = append(names, r.Member)
		}
	}
	return v.Checks[0].Fleet.Total, strings.Join(names, " ")
}

// fleetAnswer is the first A record of m's answer for www.example.org.
func (m *fleetMember) answer(t *testing.T) string {
	r := m.srv.Query(t, "www.example.org", dns.TypeA)
	for _, rr := range r.Answer {
		if a, ok := rr.(*dns.A); ok {
			return a.A.String()
		}
	}
	return ""
}

// fleetWait polls cond every 20 ms until it holds and returns how long that took,
// failing the test after within.
func fleetWait(t *testing.T, within time.Duration, what string, cond func() bool, diag func() string) time.Duration {
	t.Helper()
	start := time.Now()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Since(start) > within {
			t.Fatalf("%s: not within %s\n%s", what, within, diag())
		}
		<-tick.C
	}
	return time.Since(start)
}

const (
	fleetPrimary   = "192.0.2.1"
	fleetSecondary = "198.51.100.1"
)

// TestFleetStaggeredStartAndDeadMembers runs three CoreDNS processes with the fleet
// block users write (default timers), started 2.5 s apart. The endpoint fails only
// the first member's probes, so the quorum (more than 18% of the reachable
// checkers healthy) keeps every member on the primary once a second member counts.
//   - each member's reports count on the first within 2 s of its first probe;
//   - from the last start, every member answers the primary;
//   - after SIGKILL of the other two, the first judges alone (the secondary) within 10 s;
//   - a restarted member counts on the first again within 2 s of its first probe.
func TestFleetStaggeredStartAndDeadMembers(t *testing.T) {
	if testing.Short() {
		t.Skip("three CoreDNS processes")
	}
	coretest.Binary(t) // build before timing anything
	ep := newFleetEndpoint(t, "dns-a")
	ms := fleetMembers(t, 3, ep.URL)
	a := ms[0]
	diag := func() string {
		var b strings.Builder
		for _, m := range ms {
			n, names := m.counted()
			fmt.Fprintf(&b, "%s counts %d: %s\n", m.name, n, names)
		}
		fmt.Fprintf(&b, "%s's output:\n%s", a.name, a.srv.Output())
		return b.String()
	}
	for i, m := range ms {
		if i > 0 {
			gap := time.NewTimer(2500 * time.Millisecond) // a staggered start, not a wait for an event
			<-gap.C
		}
		m.start(t)
		fleetWait(t, 10*time.Second, m.name+" probes", func() bool { _, ok := ep.firstProbe(m.name); return ok }, diag)
		first, _ := ep.firstProbe(m.name)
		fleetWait(t, 10*time.Second, fmt.Sprintf("%s counts %d members", a.name, i+1), func() bool { n, _ := a.counted(); return n == i+1 }, diag)
		took := time.Since(first)
		t.Logf("%s counts on %s %s after its first probe", m.name, a.name, took.Round(time.Millisecond))
		if took > 2*time.Second {
			t.Errorf("%s counted on %s %s after its first probe, want within 2s", m.name, a.name, took)
		}
	}
	fleetWait(t, 5*time.Second, "every member counts all three", func() bool {
		for _, m := range ms {
			if n, _ := m.counted(); n != 3 {
				return false
			}
		}
		return true
	}, diag)
	// From the last start on, every member answers the primary. dns-a itself sees it
	// down; the quorum (2 of 3) outvotes it.
	window := time.Now().Add(3 * time.Second)
	tick := time.NewTicker(100 * time.Millisecond)
	for time.Now().Before(window) { // a measuring window: sample every 100 ms
		for _, m := range ms {
			if got := m.answer(t); got != fleetPrimary {
				t.Fatalf("%s answered %s, want the primary\n%s", m.name, got, diag())
			}
		}
		<-tick.C
	}
	tick.Stop()

	killed := time.Now()
	for _, m := range ms[1:] {
		if err := m.srv.Cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
	}
	fleetWait(t, 15*time.Second, "dns-a judges alone", func() bool {
		n, _ := a.counted()
		return n == 1 && a.answer(t) == fleetSecondary
	}, diag)
	took := time.Since(killed)
	t.Logf("%s judged alone %s after the SIGKILL of the others", a.name, took.Round(time.Millisecond))
	if took > 10*time.Second {
		t.Errorf("%s judged alone %s after the SIGKILL, want within 10s", a.name, took)
	}

	b := ms[1]
	ep.forget(b.name)
	b.start(t)
	fleetWait(t, 10*time.Second, "the restarted member probes", func() bool { _, ok := ep.firstProbe(b.name); return ok }, diag)
	first, _ := ep.firstProbe(b.name)
	fleetWait(t, 10*time.Second, "dns-a counts the restarted member", func() bool {
		n, _ := a.counted()
		return n == 2 && a.answer(t) == fleetPrimary
	}, diag)
	took = time.Since(first)
	t.Logf("the restarted %s counts on %s %s after its first probe", b.name, a.name, took.Round(time.Millisecond))
	if took > 2*time.Second {
		t.Errorf("the restarted %s counted %s after its first probe, want within 2s", b.name, took)
	}
}
