package bench

import (
	"context"
	"runtime/debug"
	"sync"
	"testing"
	"unsafe"

	"github.com/coredns/coredns/core/dnsserver"
	"github.com/miekg/dns"

	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/log"
	_ "github.com/coredns/coredns/plugin/metadata"
	_ "github.com/coredns/coredns/plugin/metrics"
)

// CoreDNS's UDP server answers every query on a goroutine of its own, which starts
// with a small stack (a few KiB: the runtime sizes new stacks by the average use it
// last saw). A query path that needs more than that copies the whole stack to one
// twice the size, once or more per query: behind a few other plugins that copying
// can cost more than the plugin's own work. These benchmarks run each query on a
// fresh goroutine, as the server does, behind the plugin chains users run, and
// report the stack the query needs from the server's ServeDNS down.

// chains are the plugins in front of the one under test, in CoreDNS's chain order:
// none, errors alone, errors with prometheus and metadata, and the chain of
// Corefile.example (prometheus, errors, log).
var chains = []struct {
	name   string
	before []string
}{
	{"bare", nil},
	{"errors", []string{"errors"}},
	{"errors+prometheus+metadata", []string{"metadata", "prometheus 127.0.0.1:0", "errors"}},
	{"example", []string{"prometheus 127.0.0.1:0", "errors", "log"}},
}

// spAddr returns an address in the caller's stack frame area: it changes between two
// calls from the same frame only if the goroutine's stack was moved (grown) between
// them.
//
//go:noinline
func spAddr() uintptr {
	var b [8]byte
	return uintptr(unsafe.Pointer(&b[0]))
}

// padFrame is the stack one padded level takes, measured once.
var padFrame = func() uintptr {
	var hi, lo uintptr
	pad(1, func() {}, &hi, &lo)
	return hi - lo
}()

// pad recurses n levels of a fixed frame, then calls f and reports whether the stack
// moved while f ran. top and leaf receive the frame addresses of the first and last
// level.
//
//go:noinline
func pad(n int, f func(), top, leaf *uintptr) bool {
	var buf [48]byte // the frame's weight; indexed by n so it is kept
	buf[n%len(buf)] = byte(n)
	if *top == 0 {
		*top = spAddr()
	}
	if n > 0 {
		return pad(n-1, f, top, leaf) && buf[(n*7)%len(buf)] >= 0
	}
	*leaf = spAddr()
	before := spAddr()
	f()
	return spAddr() != before
}

// grow makes the goroutine's stack 32 KiB, whatever size new goroutines start with,
// so that padding, not the starting size, decides where f runs out of it.
//
//go:noinline
func grow() {
	var b [16 << 10]byte
	b[spAddr()%uintptr(len(b))] = 1
	sink += b[spAddr()%uintptr(len(b))]
}

// movesAt runs f on fresh goroutines with a 32 KiB stack below 0, 1, 2, ... padded
// levels and returns the least padding at which the stack grows while f runs (at most
// 4096 levels).
func movesAt(f func()) int {
	for n := range 4096 {
		var moved bool
		var wg sync.WaitGroup
		wg.Go(func() {
			grow()
			var top, leaf uintptr
			moved = pad(n, f, &top, &leaf)
		})
		wg.Wait()
		if moved {
			return n
		}
	}
	return -1
}

// probeFrame is the frame of probe, the reference that stackNeed measures against.
const probeFrame = 256

// probe is a function that needs probeFrame bytes of stack and some.
//
//go:noinline
func probe() {
	var b [probeFrame]byte
	b[spAddr()%probeFrame] = 1
	sink += b[spAddr()%probeFrame]
}

var sink byte

// stackNeed returns about how many bytes of stack f needs, to within one padded
// level: probeFrame plus how much less padding lets f grow the goroutine's stack than
// probe. GC is off meanwhile, since it changes the size new goroutines start with.
func stackNeed(tb testing.TB, f func()) int {
	tb.Helper()
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	f() // first-call setup (metric series) is not the steady state
	ref, need := movesAt(probe), movesAt(f)
	if ref < 0 || need < 0 {
		tb.Fatal("the stack never grew")
	}
	return probeFrame + (ref-need)*int(padFrame)
}

// serveOnce answers q through s, as the server does for one UDP query.
func serveOnce(s *dnsserver.Server, w *packWriter, q *dns.Msg) func() {
	ctx := context.Background()
	return func() { s.ServeDNS(ctx, w, q) }
}

// chainServers are whoami and a weighted healthroute name of three checked members,
// each behind chain.
func chainServers(tb testing.TB, before []string) (whoami, healthroute *dnsserver.Server) {
	hr := "healthroute example.org. {" + checks + weightedRecord("w.example.org.", 3) + "}"
	return server(tb, append(before[:len(before):len(before)], "whoami")...),
		server(tb, append(before[:len(before):len(before)], hr)...)
}

// BenchmarkChain answers each query on a fresh goroutine, as CoreDNS's UDP server
// does, behind each chain, and reports stack-B, the stack the query needs below the
// server's ServeDNS (to within 64 bytes or so).
//
//	go test -run '^$' -bench Chain ./bench/
func BenchmarkChain(b *testing.B) {
	q := question("w.example.org.", "")
	for _, ch := range chains {
		wh, hr := chainServers(b, ch.before)
		for _, sc := range []struct {
			name string
			s    *dnsserver.Server
		}{{"whoami", wh}, {"healthroute", hr}} {
			b.Run(ch.name+"/"+sc.name, func(b *testing.B) {
				w := newPackWriter()
				need := stackNeed(b, serveOnce(sc.s, w, q))
				serve := serveOnce(sc.s, w, q)
				b.ReportAllocs()
				b.ResetTimer()
				var wg sync.WaitGroup
				for b.Loop() {
					wg.Go(serve)
					wg.Wait()
				}
				b.ReportMetric(float64(need), "stack-B")
			})
		}
	}
}

// TestChainStack keeps healthroute's query path no deeper than whoami's behind the
// same plugins: a query that needs more stack than its goroutine starts with pays for
// copying the stack, and behind other plugins that cost once outweighed the answer.
// Cases: the weighted name of three checked members, and the latency tree asked with
// ECS (against whoami asked the same, within 128 bytes: the ECS echo is healthroute's
// own work).
func TestChainStack(t *testing.T) {
	w := newPackWriter()
	plain, ecs := question("w.example.org.", ""), question("www.example.org.", "10.3.7.0/24")
	tr := tree(t)
	for _, ch := range chains {
		wh, hr := chainServers(t, ch.before)
		nw, nh := stackNeed(t, serveOnce(wh, w, plain)), stackNeed(t, serveOnce(hr, w, plain))
		t.Logf("%s: whoami %d B, healthroute %d B", ch.name, nw, nh)
		if nh > nw {
			t.Errorf("%s: healthroute needs %d B of stack, whoami %d B", ch.name, nh, nw)
		}
		ht := server(t, append(ch.before[:len(ch.before):len(ch.before)], tr)...)
		nw, nh = stackNeed(t, serveOnce(wh, w, ecs)), stackNeed(t, serveOnce(ht, w, ecs))
		t.Logf("%s, ECS: whoami %d B, healthroute tree %d B", ch.name, nw, nh)
		if nh > nw+128 {
			t.Errorf("%s, ECS: healthroute's tree needs %d B of stack, whoami %d B", ch.name, nh, nw)
		}
	}
}
