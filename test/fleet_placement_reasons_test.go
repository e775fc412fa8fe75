package test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/healthroute/healthroute/internal/coretest"
	"github.com/healthroute/healthroute/view"
)

// lineOf returns the 1-based line of corefile holding text.
func lineOf(t *testing.T, corefile, text string) int {
	t.Helper()
	for i, l := range strings.Split(corefile, "\n") {
		if strings.Contains(l, text) {
			return i + 1
		}
	}
	t.Fatalf("no line of the Corefile holds %q", text)
	return 0
}

// rowOf returns member's row in v, nil when there is none.
func rowOf(v *view.Fleet, member string) *view.FleetMember {
	if v == nil {
		return nil
	}
	for i := range v.Members {
		if v.Members[i].Member == member {
			return &v.Members[i]
		}
	}
	return nil
}

// TestFleetPlacementFailureReasons runs 3 CoreDNS processes in regions a, b and c
// with the fleet block users write (default timers):
//   - check web, checkers 3, whose endpoint answers 503 to dns-b's probes only:
//     every other member's /v1/checks shows dns-b's row down with its failure
//     reason (gossiped: a member's own probes of web pass), and the status page
//     writes it as "last failure: REASON";
//   - check big, checkers 5, more than the 3 members: each member warns, naming
//     the check's Corefile line, that all 3 probe it, and all 3 do.
func TestFleetPlacementFailureReasons(t *testing.T) {
	coretest.Binary(t) // build before timing anything
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.Contains(r.Header.Get("User-Agent"), "(checker dns-b)") {
			http.Error(w, "down for dns-b", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprint(w, "OK")
	}))
	t.Cleanup(web.Close)
	big := newProbeLog(t)
	ms, keyFile := newFleetMembers(t, 3)
	for i, m := range ms {
		m.corefile = m.fleetCorefile(ms, keyFile, "region "+placementRegion(i), fmt.Sprintf(`check web http %s/ {
			interval 1s
			failure_threshold 1
			checkers 3
		}
		check big http %s/ {
			interval 1s
			checkers 5
		}
		record www.example.org. failover {
			primary   A 192.0.2.1 check web
			secondary A 198.51.100.1
		}
		record big.example.org. failover {
			primary   A 192.0.2.2 check big
			secondary A 198.51.100.2
		}`, web.URL, big.URL))
	}
	for _, m := range ms {
		m.start(t)
	}
	diag := func() string {
		var b strings.Builder
		for _, m := range ms {
			fmt.Fprintf(&b, "%s: %+v\n", m.name, m.checkView("web"))
		}
		return b.String()
	}
	const reason = "status 503"
	for _, m := range []*fleetMember{ms[0], ms[2]} {
		fleetWait(t, 30*time.Second, m.name+"'s /v1/checks shows dns-b down with its failure reason", func() bool {
			v := m.checkView("web")
			own, b := rowOf(v, m.name), rowOf(v, "dns-b")
			return own != nil && own.Error == "" && !own.Down && b != nil && b.Checker && b.Down && strings.Contains(b.Error, reason)
		}, diag)
	}
	row := rowOf(ms[0].checkView("web"), "dns-b")
	if len(row.Error) > 120 {
		t.Errorf("dns-b's reason on %s is %d bytes, want at most 120: %q", ms[0].name, len(row.Error), row.Error)
	}
	_, page := httpDo(t, http.MethodGet, fmt.Sprintf("http://127.0.0.1:%d/", ms[0].api), "", "")
	if want := fmt.Sprintf("dns-b [b] 127.0.0.1:%d: down, last report ", ms[1].gossip); !strings.Contains(page, want) {
		t.Errorf("the status page does not write %q", want)
	}
	if want := ", last failure: " + row.Error; !strings.Contains(page, want) {
		t.Errorf("the status page does not write dns-b's reason %q", want)
	}

	line := lineOf(t, ms[0].corefile, "check big http")
	want := fmt.Sprintf("Corefile:%d: check big: checkers 5: only 3 members this one reaches may probe: all of them do", line)
	for _, m := range ms {
		fleetWait(t, 20*time.Second, m.name+" warns that big asks for more checkers than there are members", func() bool {
			return strings.Contains(m.srv.Output(), want)
		}, m.srv.Output)
	}
	fleetWait(t, 10*time.Second, "all 3 members probe big", func() bool {
		return len(big.since(time.Now().Add(-1500*time.Millisecond))) == 3
	}, func() string { return fmt.Sprint(big.since(time.Now().Add(-1500 * time.Millisecond))) })
}
