package healthroute

import (
	"slices"
	"testing"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"
)

// review3Forget drops every answer count of server, so that a test's blocks leave no
// series behind for later tests' scrapes.
func review3Forget(t *testing.T, server string) {
	t.Cleanup(func() {
		counting.mu.Lock()
		counting.all = slices.DeleteFunc(counting.all, func(qc *queryCounters) bool { return qc.server == server })
		counting.mu.Unlock()
		for _, f := range []*answerFamily{answersTotal, lastResortTotal} {
			f.mu.Lock()
			for k := range f.extra {
				if k[0] == server {
					delete(f.extra, k)
				}
			}
			f.mu.Unlock()
		}
	})
}

// review3Gather scrapes the default registry as the prometheus plugin does: a series
// reported twice fails the whole scrape.
func review3Gather(t *testing.T) {
	t.Helper()
	if _, err := prometheus.DefaultGatherer.Gather(); err != nil {
		t.Fatalf("scrape failed: %v", err)
	}
}

// TestReview3ReloadChangesZones: a reload that adds a zone to the block (the zones
// are no longer equal, so the new block does not adopt the old one's counts) must
// neither fail the scrape with a series reported twice nor lose the kept member's
// count, whether the old block shut down before or after the new one's first answer.
func TestReview3ReloadChangesZones(t *testing.T) {
	for _, tc := range []struct {
		name          string
		server        string
		shutdownFirst bool
	}{
		{"old block shut down first", "dns://127.0.0.1:5391", true},
		{"new block answered first", "dns://127.0.0.1:5392", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			review3Forget(t, tc.server)
			labels := map[string]string{"server": tc.server, "zone": "example.org.", "record": "rz.example.org.", "member": "keep"}
			old := testHandler(t, `healthroute example.org. {
				record rz.example.org. weighted {
					weight 10 A 192.0.2.1 id keep
				}
			}`)
			seriesAsk(t, old, tc.server, "rz.example.org.", dns.TypeA, 3)
			next := testHandler(t, `healthroute example.org. example.net. {
				record rz.example.org. weighted {
					weight 10 A 192.0.2.1 id keep
				}
				record rz.example.net. simple {
					A 192.0.2.2
				}
			}`)
			if tc.shutdownFirst {
				if err := old.OnShutdown(); err != nil {
					t.Fatal(err)
				}
			}
			seriesAsk(t, next, tc.server, "rz.example.org.", dns.TypeA, 2)
			if !tc.shutdownFirst {
				if err := old.OnShutdown(); err != nil {
					t.Fatal(err)
				}
			}
			review3Gather(t)
			if got := gatheredCounter(t, "answers_total", labels); got != 5 {
				t.Errorf("kept member after a reload that added a zone = %v, want 3 + 2", got)
			}
		})
	}
}

// TestReview3AliasSharesID: a set identifier may be given both to a member of one
// type and to an alias member of another type of the same record set (they are in
// different type groups). The two carry the same labels, so they must be one series:
// a reload's block adopting the old counts must not put them in a second series that
// the scrape then reports beside the first.
func TestReview3AliasSharesID(t *testing.T) {
	const server = "dns://127.0.0.1:5393"
	review3Forget(t, server)
	block := `healthroute {
		record ai.example.org. weighted {
			weight 10 A 192.0.2.1 id x
			weight 10 alias ai-t.example.org. AAAA id x
		}
		record ai-t.example.org. simple {
			AAAA 2001:db8::1
		}
	}`
	old := testHandler(t, block)
	seriesAsk(t, old, server, "ai.example.org.", dns.TypeA, 2)
	next := testHandler(t, block)
	seriesAsk(t, next, server, "ai.example.org.", dns.TypeA, 1) // adopts the old counts
	if err := old.OnShutdown(); err != nil {
		t.Fatal(err)
	}
	review3Gather(t)
	labels := map[string]string{"server": server, "zone": "example.org.", "record": "ai.example.org.", "member": "x"}
	if got := gatheredCounter(t, "answers_total", labels); got != 3 {
		t.Errorf("answers_total of member x = %v, want 2 + 1", got)
	}
	if err := next.OnShutdown(); err != nil {
		t.Fatal(err)
	}
}

// TestReview3ExtraThenDense: an alias into another zone of the block is counted in
// the map by the query's zone; after a reload that drops the target's zone (the
// target name now lies in the aliasing name's zone) the same labels are counted in
// the new block's series. The scrape must report them once, with both counts.
func TestReview3ExtraThenDense(t *testing.T) {
	const server = "dns://127.0.0.1:5394"
	review3Forget(t, server)
	records := `
		record ed.example.org. simple {
			alias ed.sub.example.org.
		}
		record ed.sub.example.org. weighted {
			weight 10 A 192.0.2.1 id m
		}
	}`
	old := testHandler(t, `healthroute example.org. sub.example.org. {`+records)
	seriesAsk(t, old, server, "ed.example.org.", dns.TypeA, 2)
	if err := old.OnShutdown(); err != nil {
		t.Fatal(err)
	}
	next := testHandler(t, `healthroute example.org. {`+records)
	seriesAsk(t, next, server, "ed.example.org.", dns.TypeA, 1)
	review3Gather(t)
	labels := map[string]string{"server": server, "zone": "example.org.", "record": "ed.sub.example.org.", "member": "m"}
	if got := gatheredCounter(t, "answers_total", labels); got != 3 {
		t.Errorf("answers_total through the alias = %v, want 2 + 1", got)
	}
	if err := next.OnShutdown(); err != nil {
		t.Fatal(err)
	}
}
