package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/coredns/coredns/core/dnsserver"
	"github.com/miekg/dns"
)

// serveParallel runs the queries through s from b.RunParallel's goroutines (one per P
// of -cpu), each picking queries at random with a reply writer of its own, as the
// server's goroutines on several cores do. ns/op is wall time per query over all of
// them: at -cpu 2 a server that scales perfectly shows half its -cpu 1 figure.
func serveParallel(b *testing.B, s *dnsserver.Server, qs []*dns.Msg) {
	w := newPackWriter()
	ctx := context.Background()
	for range 16 { // every member answers once: its series exists, as in a running server
		for _, q := range qs {
			s.ServeDNS(ctx, w, q)
			if w.n <= 12+len(q.Question[0].Name)+4 {
				b.Fatalf("%s: empty reply", q.Question[0].Name)
			}
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		w := newPackWriter()
		rng := rand.New(rand.NewPCG(rand.Uint64(), 1))
		for pb.Next() {
			s.ServeDNS(ctx, w, qs[rng.IntN(len(qs))])
		}
	})
}

// namesQueries is a question for each of names(n)'s names.
func namesQueries(n int) []*dns.Msg {
	qs := make([]*dns.Msg, n)
	for i := range qs {
		qs[i] = question(fmt.Sprintf("n%06d.example.org.", i), "")
	}
	return qs
}

// BenchmarkScaling is the query path on several cores: run it at -cpu 1,2 (and more
// where there are more cores) and compare each server's ns/op across -cpu, healthroute's
// ratio beside whoami's, which writes nothing shared. one: every query for one
// weighted name (its answers_total series is the same for every core); names10k:
// queries spread at random over 10,000 names, whoami asked the same names.
//
//	go test -run '^$' -bench Scaling -cpu 1,2 -count 6 ./bench/ | tee scaling.txt
func BenchmarkScaling(b *testing.B) {
	one := []*dns.Msg{question("w.example.org.", "")}
	b.Run("one/whoami", func(b *testing.B) { serveParallel(b, server(b, "whoami"), one) })
	b.Run("one/healthroute", func(b *testing.B) {
		serveParallel(b, server(b, "healthroute example.org. {"+checks+weightedRecord("w.example.org.", 3)+"}"), one)
	})
	qs := namesQueries(10000)
	b.Run("names10k/whoami", func(b *testing.B) { serveParallel(b, server(b, "whoami"), qs) })
	b.Run("names10k/healthroute", func(b *testing.B) { serveParallel(b, server(b, names(len(qs))), qs) })
}
