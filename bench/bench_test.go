// Package bench measures healthroute inside CoreDNS's own server, next to the whoami
// and file plugins, without the network: each benchmark builds a server block through
// the plugins' registered setup functions (as the Corefile would) and calls the
// server's ServeDNS, which packs the reply as the real server does. bench/run measures
// the same scenarios over loopback with dnsperf.
package bench

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strings"
	"testing"

	"github.com/coredns/caddy"
	"github.com/coredns/caddy/caddyfile"
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/plugin/pkg/log"
	"github.com/coredns/coredns/plugin/test"
	"github.com/miekg/dns"

	_ "github.com/coredns/coredns/plugin/file"
	_ "github.com/coredns/coredns/plugin/whoami"

	_ "github.com/healthroute/healthroute"
)

func init() { log.Discard() }

// server builds a CoreDNS server for zone example.org. whose block holds the plugin
// directives given, in the order of the chain (e.g. "errors", then "whoami" or
// "healthroute { ... }"), as the Corefile would. OnStartup hooks do not run:
// healthroute answers as if every check were new, that is healthy, which is the
// steady state the dnsperf scenarios measure.
func server(tb testing.TB, directives ...string) *dnsserver.Server {
	tb.Helper()
	c := caddy.NewTestController("dns", "")
	c.ServerBlockKeys = []string{"example.org."}
	for _, d := range directives {
		setup, err := caddy.DirectiveAction("dns", strings.Fields(d)[0])
		if err != nil {
			tb.Fatal(err)
		}
		c.Dispenser = caddyfile.NewDispenser("Testfile", strings.NewReader(d))
		if err := setup(c); err != nil {
			tb.Fatalf("%s: %v", d, err)
		}
	}
	cfg := dnsserver.GetConfig(c)
	cfg.Zone, cfg.Port = "example.org.", "53"
	s, err := dnsserver.NewServer("dns://127.0.0.1:53", []*dnsserver.Config{cfg})
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

// packWriter packs every reply into one reused buffer, as the server's writer does
// before sending. Its addresses are fixed values, as a real connection's are
// (test.ResponseWriter parses them from strings on every call).
type packWriter struct {
	test.ResponseWriter
	buf    []byte
	n      int
	local  net.Addr
	remote net.Addr
}

func newPackWriter() *packWriter {
	return &packWriter{buf: make([]byte, 4096),
		local:  &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1).To4(), Port: 53},
		remote: &net.UDPAddr{IP: net.IPv4(10, 3, 7, 1).To4(), Port: 40212}}
}

func (w *packWriter) LocalAddr() net.Addr  { return w.local }
func (w *packWriter) RemoteAddr() net.Addr { return w.remote }

func (w *packWriter) WriteMsg(m *dns.Msg) error {
	b, err := m.PackBuffer(w.buf)
	w.n = len(b)
	return err
}

const checks = `
	check c1 http http://127.0.0.1:1/health
	check c2 http http://127.0.0.1:2/health
	check c3 tcp 127.0.0.1:3
`

func weightedRecord(name string, members int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "record %s weighted {\n", name)
	for i := range members {
		fmt.Fprintf(&b, "weight 10 A 192.0.%d.%d check c%d\n", 2+i/250, 1+i%250, 1+i%3)
	}
	b.WriteString("}\n")
	return b.String()
}

// names is a healthroute block of n weighted names with three checked members each.
func names(n int) string { return namesShaped(n, "weighted") }

// namesShaped is a healthroute block of n names of one shape, as bench/run's
// names_block: weighted or multivalue with three checked members each, or failover
// with a checked primary and a secondary.
func namesShaped(n int, shape string) string {
	var b strings.Builder
	b.WriteString("healthroute example.org. {" + checks)
	for i := range n {
		name := fmt.Sprintf("n%06d.example.org.", i)
		switch shape {
		case "weighted":
			b.WriteString(weightedRecord(name, 3))
		case "multivalue":
			fmt.Fprintf(&b, "record %s multivalue {\n", name)
			for j := 1; j <= 3; j++ {
				fmt.Fprintf(&b, "value A 192.0.2.%d check c%d\n", j, j)
			}
			b.WriteString("}\n")
		case "failover":
			fmt.Fprintf(&b, "record %s failover {\nprimary A 192.0.2.1 check c1\nsecondary A 192.0.2.2\n}\n", name)
		default:
			panic("unknown shape " + shape)
		}
	}
	b.WriteString("}")
	return b.String()
}

// nameQuestions asks each of n names once, in an order that spreads consecutive
// questions over the configuration, as bench/run's names_queries does.
func nameQuestions(n int) []*dns.Msg {
	qs := make([]*dns.Msg, n)
	for i := range qs {
		qs[i] = question(fmt.Sprintf("n%06d.example.org.", (i*7919)%n), "")
	}
	return qs
}

// latencyTable writes the 10,000-prefix table of scenario tree and returns its path.
func latencyTable(tb testing.TB) string {
	tb.Helper()
	var csv strings.Builder
	for i := range 10000 {
		fmt.Fprintf(&csv, "10.%d.%d.0/24,us,%d\n10.%d.%d.0/24,eu,30\n", i/256, i%256, 10+i%50, i/256, i%256)
	}
	path := filepath.Join(tb.TempDir(), "latency.csv")
	if err := os.WriteFile(path, []byte(csv.String()), 0o644); err != nil {
		tb.Fatal(err)
	}
	return path
}

// tree is scenario (d): latency -> failover -> weighted.
func tree(tb testing.TB) string {
	return "healthroute example.org. {\nlatency_table " + latencyTable(tb) + checks + `
		record www.example.org. latency {
			region us alias us.example.org.
			region eu alias eu.example.org.
		}
		record us.example.org. failover {
			primary alias us-pool.example.org.
			secondary A 192.0.2.100
		}
		` + weightedRecord("us-pool.example.org.", 3) + `
		record eu.example.org. weighted {
			weight 10 A 198.51.100.1 check c1
		}
	}`
}

func zoneFile(tb testing.TB) string {
	tb.Helper()
	path := filepath.Join(tb.TempDir(), "db.example.org")
	zone := `$ORIGIN example.org.
@ 60 IN SOA ns.dns.example.org. hostmaster.example.org. 1 7200 1800 86400 60
w 60 IN A 192.0.2.1
w 60 IN A 192.0.2.2
w 60 IN A 192.0.2.3
`
	if err := os.WriteFile(path, []byte(zone), 0o644); err != nil {
		tb.Fatal(err)
	}
	return path
}

func question(name string, ecs string) *dns.Msg {
	m := new(dns.Msg)
	m.SetQuestion(name, dns.TypeA)
	if ecs != "" {
		_, p, _ := net.ParseCIDR(ecs)
		bits, _ := p.Mask.Size()
		m.SetEdns0(1232, false)
		o := m.IsEdns0()
		o.Option = append(o.Option, &dns.EDNS0_SUBNET{Code: dns.EDNS0SUBNET, Family: 1,
			SourceNetmask: uint8(bits), Address: p.IP.To4()})
	}
	return m
}

// serve runs the queries round robin through s and fails on any answer without
// records.
func serve(b *testing.B, s *dnsserver.Server, qs []*dns.Msg) {
	w := newPackWriter()
	ctx := context.Background()
	// Warm up until (almost surely) every member has answered once, so its metric
	// series exists, as in a running server: the first answer from a member creates it.
	for range 16 {
		for _, q := range qs {
			s.ServeDNS(ctx, w, q)
			if w.n <= 12+len(q.Question[0].Name)+4 {
				b.Fatalf("%s: empty reply", q.Question[0].Name)
			}
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	i := 0
	for b.Loop() {
		s.ServeDNS(ctx, w, qs[i])
		if i++; i == len(qs) {
			i = 0
		}
	}
}

// BenchmarkScenario is bench/run's scenarios inside one process: the per-query
// cost of the whole server (zone match, plugin chain, reply packing). healthroute's
// own cost is the difference to whoami.
func BenchmarkScenario(b *testing.B) {
	w := question("w.example.org.", "")
	b.Run("whoami", func(b *testing.B) { serve(b, server(b, "whoami"), []*dns.Msg{w}) })
	b.Run("whoami-ecs", func(b *testing.B) {
		serve(b, server(b, "whoami"), []*dns.Msg{question("www.example.org.", "10.3.7.0/24")})
	})
	b.Run("file", func(b *testing.B) { serve(b, server(b, "file "+zoneFile(b)), []*dns.Msg{w}) })
	b.Run("weighted", func(b *testing.B) {
		serve(b, server(b, "healthroute example.org. {"+checks+weightedRecord("w.example.org.", 3)+"}"), []*dns.Msg{w})
	})
	b.Run("tree", func(b *testing.B) {
		serve(b, server(b, tree(b)), []*dns.Msg{question("www.example.org.", "10.3.7.0/24")})
	})
	b.Run("names10k", func(b *testing.B) {
		qs := make([]*dns.Msg, 10000)
		for i := range qs {
			qs[i] = question(fmt.Sprintf("n%06d.example.org.", i), "")
		}
		serve(b, server(b, names(len(qs))), qs)
	})
}

// BenchmarkShapes is bench/run's 10,000-name scenarios in three shapes beside whoami
// asked the same names (whoami10k): what a lookup among 10,000 names and each shape's
// answer cost beyond whoami's work.
func BenchmarkShapes(b *testing.B) {
	const n = 10000
	qs := nameQuestions(n)
	b.Run("whoami10k", func(b *testing.B) { serve(b, server(b, "whoami"), qs) })
	for _, shape := range []string{"weighted", "multivalue", "failover"} {
		b.Run(shape+"10k", func(b *testing.B) { serve(b, server(b, namesShaped(n, shape)), qs) })
	}
}

// BenchmarkNames: cost per query as the number of names grows (queries spread over
// every name).
func BenchmarkNames(b *testing.B) {
	for _, n := range []int{1, 1000, 10000, 100000} {
		b.Run(fmt.Sprintf("names=%d", n), func(b *testing.B) {
			qs := make([]*dns.Msg, n)
			for i := range qs {
				qs[i] = question(fmt.Sprintf("n%06d.example.org.", i), "")
			}
			serve(b, server(b, names(n)), qs)
		})
	}
}

// BenchmarkMembers: one weighted name with more and more checked members.
func BenchmarkMembers(b *testing.B) {
	for _, n := range []int{1, 3, 10, 100} {
		b.Run(fmt.Sprintf("members=%d", n), func(b *testing.B) {
			s := server(b, "healthroute example.org. {"+checks+weightedRecord("w.example.org.", n)+"}")
			serve(b, s, []*dns.Msg{question("w.example.org.", "")})
		})
	}
}

// BenchmarkDepth: alias chains of growing depth. static: failover levels, decided when
// health changes, so a query walks precomputed choices. latency: latency levels ranked
// per query for the ECS client (10,000-row table), each level's two regions aliasing
// the next level.
func BenchmarkDepth(b *testing.B) {
	for _, kind := range []string{"static", "latency"} {
		for _, depth := range []int{1, 2, 4, 8} {
			b.Run(fmt.Sprintf("%s/depth=%d", kind, depth), func(b *testing.B) {
				var cf strings.Builder
				cf.WriteString("healthroute example.org. {" + checks)
				if kind == "latency" {
					cf.WriteString("latency_table " + latencyTable(b) + "\n")
				}
				for l := 1; l < depth; l++ {
					next := fmt.Sprintf("l%d.example.org.", l+1)
					if l+1 == depth {
						next = "leaf.example.org."
					}
					if kind == "static" {
						fmt.Fprintf(&cf, "record l%d.example.org. failover {\nprimary alias %s\nsecondary A 198.51.100.%d\n}\n", l, next, l)
					} else {
						fmt.Fprintf(&cf, "record l%d.example.org. latency {\nregion us alias %s\nregion eu A 198.51.100.%d\n}\n", l, next, l)
					}
				}
				first := "l1.example.org."
				if depth == 1 {
					first = "leaf.example.org."
				}
				cf.WriteString(weightedRecord("leaf.example.org.", 3) + "}")
				serve(b, server(b, cf.String()), []*dns.Msg{question(first, "10.3.7.0/24")})
			})
		}
	}
}

// heapProfile names the file BenchmarkMemoryPerName writes the heap profile of the
// configured block to, each size's after the name: what each allocation site keeps.
var heapProfile = flag.String("memory.heapprofile", "", "BenchmarkMemoryPerName: write the configured block's heap profile to this file, suffixed by the name count")

// BenchmarkMemoryPerName reports the heap a configured name costs (three checked
// weighted members per name; the checks are shared): B/name once the server block is
// built, and B/name-queried once every name has been asked for, which adds each
// member's answers_total series. It builds the block once whatever -benchtime says.
//
//	go test -run '^$' -bench MemoryPerName ./bench/
//	go test -run '^$' -bench MemoryPerName/names=10000 ./bench/ -args -memory.heapprofile=/tmp/heap
//	go tool pprof -sample_index=inuse_space -top /tmp/heap.10000
func BenchmarkMemoryPerName(b *testing.B) {
	if *heapProfile != "" {
		defer func(rate int) { runtime.MemProfileRate = rate }(runtime.MemProfileRate)
		runtime.MemProfileRate = 1 // every allocation, for exact bytes per name
	}
	for _, n := range []int{10000, 100000} {
		b.Run(fmt.Sprintf("names=%d", n), func(b *testing.B) {
			input := names(n)
			var before, built, queried runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			s := server(b, input)
			runtime.GC()
			runtime.ReadMemStats(&built)
			if *heapProfile != "" {
				f, err := os.Create(fmt.Sprintf("%s.%d", *heapProfile, n))
				if err != nil {
					b.Fatal(err)
				}
				if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
					b.Fatal(err)
				}
				if err := f.Close(); err != nil {
					b.Fatal(err)
				}
			}
			w := newPackWriter()
			for i := range n {
				s.ServeDNS(context.Background(), w, question(fmt.Sprintf("n%06d.example.org.", i), ""))
			}
			runtime.GC()
			runtime.ReadMemStats(&queried)
			runtime.KeepAlive(s)
			b.ReportMetric(float64(built.HeapAlloc-before.HeapAlloc)/float64(n), "B/name")
			b.ReportMetric(float64(queried.HeapAlloc-before.HeapAlloc)/float64(n), "B/name-queried")
		})
	}
}

// TestScenariosAnswer keeps the benchmark scenarios honest: each server answers its
// query with records, so a benchmark never measures an error path.
func TestScenariosAnswer(t *testing.T) {
	w := question("w.example.org.", "")
	ecs := question("www.example.org.", "10.3.7.0/24")
	for _, sc := range []struct {
		name      string
		directive string
		q         *dns.Msg
	}{
		{"whoami", "whoami", w},
		{"file", "file " + zoneFile(t), w},
		{"weighted", "healthroute example.org. {" + checks + weightedRecord("w.example.org.", 3) + "}", w},
		{"tree", tree(t), ecs},
		{"names10k", names(100), question("n000042.example.org.", "")},
	} {
		t.Run(sc.name, func(t *testing.T) {
			pw := newPackWriter()
			server(t, sc.directive).ServeDNS(context.Background(), pw, sc.q)
			var m dns.Msg
			if err := m.Unpack(pw.buf[:pw.n]); err != nil {
				t.Fatalf("reply does not unpack: %v", err)
			}
			records := len(m.Answer)
			if sc.name == "whoami" {
				records = len(m.Extra) // whoami answers in the additional section
			}
			if m.Rcode != dns.RcodeSuccess || records == 0 {
				t.Fatalf("reply without records:\n%v", &m)
			}
		})
	}
}
