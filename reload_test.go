package healthroute

import (
	"context"
	"fmt"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/coredns/coredns/plugin/pkg/dnstest"
	"github.com/coredns/coredns/plugin/test"
	"github.com/miekg/dns"

	"github.com/healthroute/healthroute/operator"
)

// TestFailedReloadUndone follows caddy's Restart: the running instance's
// OnRestart, the new instance's OnStartup block by block, then either the old
// instance's OnShutdown (success) or, when a startup fails, the old instance's
// OnRestartFailed, with no OnShutdown for the new blocks that did start. Those
// must be shut down by the registry: otherwise they keep their checks probing and
// stay on the API, overrides and all, for the life of the process.
func TestFailedReloadUndone(t *testing.T) {
	target, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer target.Close()
	held, err := net.Listen("tcp", "127.0.0.1:0") // the api address the second new block cannot take
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	block := func(check, api string) *HealthRoute {
		t.Helper()
		h := testHandler(t, fmt.Sprintf(`healthroute {
			%s
			check %s tcp %s
			record www.example.org. failover {
				primary A 192.0.2.1 check %s
				secondary A 192.0.2.2
			}
		}`, api, check, target.Addr(), check))
		return h
	}
	refs := func(reg *registry) int { reg.mu.Lock(); defer reg.mu.Unlock(); return reg.refs }
	registered := func(reg *registry, h *HealthRoute) bool {
		return slices.ContainsFunc(reg.op.Blocks(), func(b operator.Block) bool { return b == h })
	}

	t.Run("failed", func(t *testing.T) {
		old := block("up", "")
		reg := old.reg
		if err := old.OnStartup(); err != nil {
			t.Fatal(err)
		}
		defer old.OnShutdown()
		reg.beginReload()
		first, second := block("new", ""), block("other", "api "+held.Addr().String())
		first.reg, second.reg = reg, reg
		if err := first.OnStartup(); err != nil {
			t.Fatal(err)
		}
		if err := second.OnStartup(); err == nil {
			second.OnShutdown()
			t.Fatal("the second block started on an address in use")
		}
		reg.abortReload()
		if registered(reg, first) {
			t.Error("a block of the failed reload is still registered with the operator")
		}
		if !registered(reg, old) {
			t.Error("the running block was unregistered by the failed reload")
		}
		if n := refs(reg); n != 1 {
			t.Errorf("registry holds %d references after the failed reload, want the running block's 1", n)
		}
	})

	// A reload asked for while one runs (SIGUSR1 during a route53 reload) is refused
	// at its OnRestart; caddy then calls OnRestartFailed for it, which must leave the
	// running reload's blocks alone; once the running one ends, the refused one runs.
	for _, outcome := range []string{"succeeds", "fails"} {
		t.Run("second reload while one "+outcome, func(t *testing.T) {
			old := block("up", "")
			reg := old.reg
			followed := make(chan struct{}, 2)
			reg.follow = func() { followed <- struct{}{} }
			if err := old.OnStartup(); err != nil {
				t.Fatal(err)
			}
			if err := reg.beginReload(); err != nil {
				t.Fatal(err)
			}
			next := block("new", "")
			next.reg = reg
			if err := next.OnStartup(); err != nil {
				t.Fatal(err)
			}
			if err := reg.beginReload(); err != errReloadRunning {
				t.Fatalf("a second reload during one: OnRestart returned %v, want errReloadRunning", err)
			}
			reg.abortReload() // caddy's OnRestartFailed for the refused one
			if !registered(reg, next) || !reg.isReloading() {
				t.Fatalf("the refused reload undid the running one (new block registered %t, reloading %t)", registered(reg, next), reg.isReloading())
			}
			select {
			case <-followed:
				t.Fatal("the refused reload was run again before the running one ended")
			default:
			}
			if outcome == "succeeds" {
				old.OnShutdown()
				defer next.OnShutdown()
			} else {
				reg.abortReload()
				defer old.OnShutdown()
				if registered(reg, next) {
					t.Error("the failed reload's block is still registered")
				}
			}
			select {
			case <-followed:
			case <-time.After(10 * time.Second):
				t.Fatal("the refused reload did not run after the running one ended")
			}
			if len(followed) != 0 {
				t.Error("the refused reload ran twice")
			}
		})
	}

	t.Run("succeeded", func(t *testing.T) {
		old := block("up", "")
		reg := old.reg
		if err := old.OnStartup(); err != nil {
			t.Fatal(err)
		}
		reg.beginReload()
		next := block("new", "")
		next.reg = reg
		if err := next.OnStartup(); err != nil {
			t.Fatal(err)
		}
		defer next.OnShutdown()
		old.OnShutdown()  // the new instance took over
		reg.abortReload() // a later failure (another plugin's OnShutdown) must not undo it
		if !registered(reg, next) || refs(reg) != 1 {
			t.Errorf("the reloaded block was shut down after it took over (registered %t, %d references)", registered(reg, next), refs(reg))
		}
	})
}

// TestReloadAnswersNeverGoBack follows caddy's Restart as TestFailedReloadUndone
// does, with queries in between: while a reload runs, the old and the new
// instance's handlers of a block both take queries. Once the new handler has
// answered, the old one answers with the new generation too (it hands its queries
// over), through a second reload as well; a failed reload hands them back; a new
// block of other zones takes nothing over. Handing a query over allocates nothing
// more than answering it.
func TestReloadAnswersNeverGoBack(t *testing.T) {
	gen := func(zone string, k int) *HealthRoute {
		t.Helper()
		return testHandler(t, fmt.Sprintf(`healthroute %s {
			record g.example.org. simple {
				TXT "g%d"
			}
		}`, zone, k))
	}
	ctx := context.Background()
	q := new(dns.Msg)
	q.SetQuestion("g.example.org.", dns.TypeTXT)
	ask := func(h *HealthRoute) string {
		t.Helper()
		rec := dnstest.NewRecorder(&test.ResponseWriter{})
		if _, err := h.ServeDNS(ctx, rec, q); err != nil || rec.Msg == nil || len(rec.Msg.Answer) != 1 {
			t.Fatalf("g.example.org TXT: %v, %v", rec.Msg, err)
		}
		return rec.Msg.Answer[0].(*dns.TXT).Txt[0]
	}
	expect := func(h *HealthRoute, who, want string) {
		t.Helper()
		if got := ask(h); got != want {
			t.Errorf("%s answers %s, want %s", who, got, want)
		}
	}
	start := func(h *HealthRoute, reg *registry) {
		t.Helper()
		h.reg = reg
		if err := h.OnStartup(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if h.stop != nil { // not shut down by the test
				h.OnShutdown()
			}
		})
	}

	g0 := gen("", 0)
	reg := g0.reg
	start(g0, reg)
	expect(g0, "the running handler", "g0")

	reg.beginReload()
	g1 := gen("", 1)
	start(g1, reg)
	expect(g0, "the old handler before the new one answered", "g0")
	expect(g1, "the new handler", "g1")
	expect(g0, "the old handler once the new one answered", "g1")
	old, handed := testing.AllocsPerRun(100, func() { g1.ServeDNS(ctx, &test.ResponseWriter{}, q) }),
		testing.AllocsPerRun(100, func() { g0.ServeDNS(ctx, &test.ResponseWriter{}, q) })
	if handed != old {
		t.Errorf("a handed-over query allocates %v times, the new handler's own %v", handed, old)
	}
	g0.OnShutdown() // the commit: caddy has stopped the old servers, a query in flight still goes over
	expect(g0, "the old handler after the commit", "g1")

	reg.beginReload()
	g2 := gen("", 2)
	start(g2, reg)
	expect(g2, "the second reload's handler", "g2")
	expect(g1, "the first reload's handler", "g2")
	expect(g0, "the first handler, two reloads old", "g2")
	g1.OnShutdown()

	// A failed reload (a later block did not start) whose handler answered: the
	// running one answers itself again.
	reg.beginReload()
	g3 := gen("", 3)
	start(g3, reg)
	expect(g3, "the failing reload's handler", "g3")
	expect(g2, "the running handler during the failing reload", "g3")
	reg.abortReload()
	expect(g2, "the running handler after the reload failed", "g2")

	// A new block of another zone (below the running one's) is another block: nothing
	// is handed over.
	reg.beginReload()
	other := gen("g.example.org", 4)
	start(other, reg)
	ask(other)
	expect(g2, "the running handler beside a new block of other zones", "g2")
	g2.OnShutdown()
}
