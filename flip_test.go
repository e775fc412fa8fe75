package healthroute

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/healthroute/healthroute/health"
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

// BenchmarkFlip is flip-to-answer: the time from a health snapshot in which one check
// changed to the routing table that answers queries (Publish: compile and swap), one
// flip per iteration, cycling through the checks, each going down and back up. It
// reports the p99 of the flips and the share of a core that 100 flips a second take.
//
//	go test -run '^$' -bench Flip -benchtime 200x .
func BenchmarkFlip(b *testing.B) {
	for _, sz := range []struct{ names, checks int }{{10000, 10000}, {100000, 10000}, {1000000, 10000}} {
		b.Run(fmt.Sprintf("names=%d/checks=%d", sz.names, sz.checks), func(b *testing.B) {
			cfg := mustParse(b, flipBlock(sz.names, sz.checks))
			r := NewResolver(cfg)
			r.onPublish = nil // no metrics: the compile alone
			states := map[string]health.Status{}
			fps := make([]string, sz.checks)
			for c := range sz.checks {
				fps[c] = cfg.Checks[fmt.Sprintf("c%d", c)].Fingerprint()
				states[fps[c]] = health.Status{Seen: true}
			}
			gen := uint64(1)
			r.Publish(health.NewSnapshot(gen, states))
			var took []time.Duration
			b.ResetTimer()
			i := 0
			for b.Loop() {
				b.StopTimer()
				fp := fps[(i/2)%len(fps)]
				states[fp] = health.Status{Seen: true, Down: i%2 == 0}
				gen++
				snap := health.NewSnapshot(gen, states)
				i++
				b.StartTimer()
				start := time.Now()
				r.Publish(snap)
				took = append(took, time.Since(start))
			}
			slices.Sort(took)
			p99 := took[min(len(took)-1, len(took)*99/100)]
			var sum time.Duration
			for _, d := range took {
				sum += d
			}
			b.ReportMetric(float64(p99.Microseconds())/1000, "p99-ms")
			b.ReportMetric(float64(sum)/float64(len(took))*100/1e9*100, "%core@100flips/s")
		})
	}
}
