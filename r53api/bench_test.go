package r53api

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/healthroute/healthroute/control"
	"github.com/healthroute/healthroute/route53"
)

// zoneOf10k fills the zone example.org. of the server's node with 10,000 A
// record sets, in batches of 1,000.
func zoneOf10k(b *testing.B, s *Server) {
	b.Helper()
	ttl := int64(60)
	for batch := range 10 {
		cmd := &control.APICommand{ChangeID: fmt.Sprintf("C%d", batch), Zone: "example.org."}
		for i := batch * 1000; i < (batch+1)*1000; i++ {
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

// BenchmarkChangeBatch1000 checks (Preview, conversion of the whole zone) and
// applies a batch of 1,000 UPSERTs to a 10,000-record-set zone through a
// single-voter node (raft log, state file written and synced).
func BenchmarkChangeBatch1000(b *testing.B) {
	s, _ := startTest(b, DefaultLimits, Zone{Name: "example.org."})
	zoneOf10k(b, s)
	z := Zone{Name: "example.org."}
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		n++
		req := &changeResourceRecordSetsRequest{}
		ttl := int64(60 + n)
		for i := range 1000 {
			rs := &route53.ResourceRecordSet{Name: fmt.Sprintf("h%05d.example.org.", i), Type: "A", TTL: &ttl, ResourceRecords: []route53.ResourceRecord{{Value: "192.0.2.2"}}}
			req.ChangeBatch.Changes = append(req.ChangeBatch.Changes, struct {
				Action            string
				ResourceRecordSet *route53.ResourceRecordSet
			}{"UPSERT", rs})
		}
		cmd := &control.APICommand{ChangeID: fmt.Sprintf("B%d", n), Zone: z.Name}
		if e := checkBatch(z, req, cmd); e != nil {
			b.Fatal(e)
		}
		next, err := s.state().Preview(cmd)
		if err != nil {
			b.Fatal(err)
		}
		if e := convertible(z, next); e != nil {
			b.Fatal(e)
		}
		if e := s.propose(context.Background(), cmd); e != nil {
			b.Fatal(e)
		}
	}
}
