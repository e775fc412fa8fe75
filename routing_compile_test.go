package healthroute

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/plugin/pkg/dnstest"
	"github.com/coredns/coredns/plugin/test"
	"github.com/miekg/dns"

	"github.com/healthroute/healthroute/health"
	"github.com/healthroute/healthroute/routing"
)

// flipBlock is a block of names weighted names whose three members use checks drawn
// round robin from checks tcp checks (each check then serves 3*names/checks members).
func flipBlock(names, checks int) string {
	var b strings.Builder
	b.WriteString("healthroute {\n")
	for c := range checks {
		fmt.Fprintf(&b, "check c%d tcp 127.0.0.1:%d\n", c, 1+c%60000)
	}
	for i := range names {
		fmt.Fprintf(&b, "record n%07d.example.org. weighted {\n", i)
		for j := range 3 {
			fmt.Fprintf(&b, "weight 10 A 192.0.2.%d check c%d\n", 1+j, (3*i+j)%checks)
		}
		b.WriteString("}\n")
	}
	b.WriteString("}")
	return b.String()
}

// BenchmarkFlip is flip-to-answer: the time from a check's change of status to the
// routing table that answers queries (compile and swap), one flip per iteration,
// cycling through the checks, each forced down and handed back by an operator
// override. A probed flip costs the same plus diffing the one snapshot shard (of 64)
// that the scheduler copied. It reports the p99 of the flips and the share of a core
// that 100 flips a second take, and the maximum: the bound (10 ms at 100,000 names)
// holds for every flip, so run at least 100. With hook=true each flip goes through
// the block as the operator's override does, runs the publish hook (metrics,
// webhook) and ends with the first answer of a name using the check, through
// ServeDNS, while another goroutine asks for every name in turn.
//
//	go test -run '^$' -bench Flip -benchtime 100x .
func BenchmarkFlip(b *testing.B) {
	for _, sz := range []struct {
		names, checks int
		hook          bool
	}{{10000, 10000, false}, {100000, 10000, false}, {1000000, 10000, false}, {10000, 10000, true}, {100000, 10000, true}} {
		b.Run(fmt.Sprintf("names=%d/checks=%d/hook=%v", sz.names, sz.checks, sz.hook), func(b *testing.B) {
			cfg := mustParse(b, flipBlock(sz.names, sz.checks))
			h := newHandler(cfg, &registry{})
			h.Next = test.NextHandler(dns.RcodeNameError, nil)
			b.Cleanup(func() { shared.counting.drop(cfg) })
			r := h.resolver
			if !sz.hook {
				r.OnPublish = nil // no metrics: the compile alone
			}
			ctx := context.WithValue(context.Background(), dnsserver.Key{}, &dnsserver.Server{Addr: "dns://127.0.0.1:5314"})
			m := new(dns.Msg)
			states := map[string]health.Status{}
			for _, s := range cfg.Checks {
				states[s.Fingerprint()] = health.Status{Seen: true}
			}
			r.Publish(health.NewSnapshot(1, states))
			runtime.GC() // the parse's garbage is not the flips' cost
			var took []time.Duration
			i := 0
			stop := make(chan struct{})
			if sz.hook {
				go func() {
					qm := new(dns.Msg)
					for k := 0; ; k++ {
						select {
						case <-stop:
							return
						default:
						}
						qm.SetQuestion(fmt.Sprintf("n%07d.example.org.", k%sz.names), dns.TypeA)
						h.ServeDNS(ctx, dnstest.NewRecorder(&test.ResponseWriter{}), qm)
					}
				}()
			}
			for b.Loop() {
				over := map[string]bool{}
				c := (i / 2) % sz.checks
				if i%2 == 0 {
					over[fmt.Sprintf("c%d", c)] = false
				}
				i++
				m.SetQuestion(fmt.Sprintf("n%07d.example.org.", c/3), dns.TypeA) // a name using check c
				start := time.Now()
				h.SetOverrides(over)
				if sz.hook {
					if _, err := h.ServeDNS(ctx, dnstest.NewRecorder(&test.ResponseWriter{}), m); err != nil {
						b.Fatal(err)
					}
				}
				took = append(took, time.Since(start))
			}
			close(stop)
			slices.Sort(took)
			p99 := took[min(len(took)-1, len(took)*99/100)]
			var sum time.Duration
			for _, d := range took {
				sum += d
			}
			b.ReportMetric(float64(p99.Microseconds())/1000, "p99-ms")
			b.ReportMetric(float64(took[len(took)-1].Microseconds())/1000, "max-ms")
			b.ReportMetric(float64(sum)/float64(len(took))*100/1e9*100, "%core@100flips/s")
		})
	}
}

// incrementalBlock has aliases with and without evaluate target health over shared
// record groups, a calculated check, a multivalue and a client-dependent group.
const incrementalBlock = `healthroute {
	check c1 tcp 127.0.0.1:1
	check c2 tcp 127.0.0.1:2
	check c3 tcp 127.0.0.1:3
	check c4 tcp 127.0.0.1:4
	check both calculated c1 c2 {
		threshold 2
	}
	record www.example.org. failover {
		primary   alias east.example.org.
		secondary alias west.example.org.
	}
	record app.example.org. weighted {
		weight 10 alias east.example.org. check both
		weight 10 alias www.example.org. evaluate_target_health no
		weight 0 A 192.0.2.9 check c4
	}
	record east.example.org. weighted {
		weight 10 A 192.0.2.1 check c1
		weight 10 A 192.0.2.2 check both
	}
	record west.example.org. weighted {
		weight 10 A 198.51.100.1 check c3
		weight 10 A 198.51.100.2 check c4
	}
	record mv.example.org. multivalue {
		value A 192.0.2.20 check c2
		value A 192.0.2.21 check c3
	}
	record ip.example.org. ip {
		cidr 192.0.2.0/24 alias www.example.org.
		default alias west.example.org.
	}
}`

// TestRecompileMatchesCompile: after every flip of a random sequence (probed states
// and operator overrides), the table that Publish compiled incrementally holds the
// same state for every node as a compile from scratch.
func TestRecompileMatchesCompile(t *testing.T) {
	r, cfg := testResolver(t, incrementalBlock)
	names := []string{"c1", "c2", "c3", "c4"}
	down := map[string]bool{}
	over := map[string]bool{}
	rng := rand.New(rand.NewPCG(7, 8))
	for step := range 300 {
		name := names[rng.IntN(len(names))]
		if rng.IntN(4) == 0 {
			switch rng.IntN(3) {
			case 0:
				delete(over, name)
			case 1:
				over[name] = true
			default:
				over[name] = false
			}
			r.SetOverrides(maps.Clone(over))
		} else {
			down[name] = !down[name]
			var ds []string
			for n, d := range down {
				if d {
					ds = append(ds, n)
				}
			}
			snap := snapshot(cfg, ds...)
			snap.Gen = uint64(step + 1)
			r.Publish(snap)
		}
		got := r.Table.Load()
		want := routing.Compile(got.Plan, got.Snap, got.Over)
		for _, n := range got.Plan.Nodes {
			if g, w := got.State(n.ID), want.State(n.ID); !reflect.DeepEqual(g, w) {
				t.Fatalf("step %d (down %v, overrides %v): %s %s: incremental %+v, from scratch %+v",
					step, down, over, n.Set.Name, dns.TypeToString[n.QType], *g, *w)
			}
		}
		if !slices.Equal(got.Judged, want.Judged) {
			t.Fatalf("step %d: judged %v, from scratch %v", step, got.Judged, want.Judged)
		}
	}
}

// TestRecompileReachesOnlyDependents: a flip evaluates again the nodes that use the
// check, directly or through a calculated parent, and the nodes aliasing those, and
// no other.
func TestRecompileReachesOnlyDependents(t *testing.T) {
	r, cfg := testResolver(t, incrementalBlock)
	r.Publish(snapshot(cfg))
	r.Publish(snapshot(cfg, "c3"))
	reached := func() []string {
		var out []string
		for _, n := range r.Table.Load().Changed {
			out = append(out, n.Set.Name)
		}
		slices.Sort(out)
		return slices.Compact(out)
	}
	// c3: west (and mv), and through aliases www, app (via www) and ip.
	if got, want := reached(), []string{"app.example.org.", "ip.example.org.", "mv.example.org.", "west.example.org.", "www.example.org."}; !slices.Equal(got, want) {
		t.Errorf("c3 down reached %v, want %v", got, want)
	}
	r.Publish(snapshot(cfg, "c3", "c1"))
	// c1 and its calculated parent both: east, app (check both; alias to east), and
	// through east's parents www, and theirs.
	if got, want := reached(), []string{"app.example.org.", "east.example.org.", "ip.example.org.", "www.example.org."}; !slices.Equal(got, want) {
		t.Errorf("c1 down reached %v, want %v", got, want)
	}
	r.Publish(snapshot(cfg, "c3", "c1"))
	if got := reached(); len(got) != 0 {
		t.Errorf("an unchanged snapshot reached %v", got)
	}
}
