package r53api

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"testing"

	"github.com/healthroute/healthroute/control"
	"github.com/healthroute/healthroute/route53"
)

// zoneOf10k fills the zone example.org. of the server's node with 10,000 A
// record sets, in batches of 1,000.
func zoneOf10k(b *testing.B, s *Server) { zoneOf(b, s, 10_000, 1000) }

// zoneOf fills the zone example.org. of the server's node with n A record sets
// (h00000, h00001, ...), in commands of per.
func zoneOf(b *testing.B, s *Server, n, per int) {
	b.Helper()
	ttl := int64(60)
	for batch := range n / per {
		cmd := &control.APICommand{ChangeID: fmt.Sprintf("C%d", batch), Zone: "example.org."}
		for i := batch * per; i < (batch+1)*per; i++ {
			cmd.Records = append(cmd.Records, control.RecordChange{Action: "CREATE", RecordSet: route53.ResourceRecordSet{
				Name: fmt.Sprintf("h%05d.example.org.", i), Type: "A", TTL: &ttl, ResourceRecords: []route53.ResourceRecord{{Value: "192.0.2.1"}}}})
		}
		if e := s.propose(context.Background(), cmd); e != nil {
			b.Fatal(e)
		}
	}
}

// BenchmarkListResourceRecordSetsPage lists one page of 300 from the middle of a
// 10,000-record-set zone (the handler, after authentication).
func BenchmarkListResourceRecordSetsPage(b *testing.B) {
	s, _ := startTest(b, DefaultLimits, Zone{Name: "example.org."})
	zoneOf10k(b, s)
	req := httptest.NewRequest("GET", "/2013-04-01/hostedzone/"+ZoneID("example.org.")+"/rrset?name=h05000.example.org.&type=A", nil)
	b.ReportAllocs()
	for b.Loop() {
		w := httptest.NewRecorder()
		s.mux.ServeHTTP(w, req)
		if w.Code != http.StatusOK {
			b.Fatal(w.Code, w.Body.String())
		}
	}
}

// BenchmarkChangeBatch1000 checks and applies a batch of 1,000 UPSERTs to a
// 10,000-record-set zone through a single-voter node (raft log, state file
// written and synced), as the API does.
func BenchmarkChangeBatch1000(b *testing.B) { benchBatch(b, 10_000) }

// BenchmarkChangeBatch1000Of100k is BenchmarkChangeBatch1000 on a zone of
// 100,000 record sets: a batch's cost does not grow with the zone.
func BenchmarkChangeBatch1000Of100k(b *testing.B) { benchBatch(b, 100_000) }

func benchBatch(b *testing.B, size int) {
	s, _ := startTest(b, DefaultLimits, Zone{Name: "example.org."})
	zoneOf(b, s, size, 10_000)
	z := Zone{Name: "example.org."}
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		n++
		req := &changeResourceRecordSetsRequest{}
		ttl := int64(60 + n)
		for i := range 1000 {
			rs := &route53.ResourceRecordSet{Name: fmt.Sprintf("h%05d.example.org.", i*(size/1000)), Type: "A", TTL: &ttl, ResourceRecords: []route53.ResourceRecord{{Value: "192.0.2.2"}}}
			req.ChangeBatch.Changes = append(req.ChangeBatch.Changes, struct {
				Action            string
				ResourceRecordSet *route53.ResourceRecordSet
			}{"UPSERT", rs})
		}
		if _, e := s.applyBatch(context.Background(), z, req); e != nil {
			b.Fatal(e)
		}
	}
	b.StopTimer()
	// The heap held after the batches, against the size of the records as the
	// state file writes them: the state holds them once, not a copy per batch.
	// Two collections: the first moves encoding/json's pooled buffer (the last
	// state file's encoding, reused by the next write) to sync.Pool's victim
	// cache, the second frees it, so what is left is what the state holds.
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	records, err := json.Marshal(s.state().Zones[z.Name].RecordSets)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(ms.HeapAlloc)/float64(len(records)), "heap/records")
}
