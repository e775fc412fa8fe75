package control

import (
	"errors"
	"strings"
	"testing"

	"github.com/healthroute/healthroute/route53"
)

// aRS is an A record set; with a set identifier, a weighted one (the state machine
// refuses a zone the importer could not convert).
func aRS(name, value, id string) route53.ResourceRecordSet {
	ttl := int64(60)
	rs := route53.ResourceRecordSet{Name: name, Type: "A", SetIdentifier: id, TTL: &ttl, ResourceRecords: []route53.ResourceRecord{{Value: value}}}
	if id != "" {
		weight := int64(1)
		rs.Weight = &weight
	}
	return rs
}

func apiCmd(c *APICommand) *Command { return &Command{Time: t0, Member: "dns-a", API: c} }

func batch(id string, ch ...RecordChange) *Command {
	return apiCmd(&APICommand{ChangeID: id, Zone: "example.org.", Records: ch})
}

func TestAPIBatchAppliesWholeOrNotAtAll(t *testing.T) {
	s := NewState()
	if err := s.Apply(1, batch("C1", RecordChange{"CREATE", aRS("a.example.org", "192.0.2.1", "")})); err != nil {
		t.Fatal(err)
	}
	err := s.Apply(2, batch("C2",
		RecordChange{"CREATE", aRS("b.example.org", "192.0.2.2", "")},
		RecordChange{"CREATE", aRS("A.example.org.", "192.0.2.3", "")},
		RecordChange{"DELETE", aRS("c.example.org", "192.0.2.4", "")}))
	var ref *Refusal
	if !errors.As(err, &ref) || ref.Code != CodeInvalidChangeBatch || len(ref.Messages) != 2 {
		t.Fatalf("batch with two bad changes: %v, want InvalidChangeBatch with 2 messages", err)
	}
	if !strings.Contains(ref.Messages[0], "[name='a.example.org.', type='A'] but it already exists") || !strings.Contains(ref.Messages[1], "but it was not found") {
		t.Errorf("messages %q are not Route 53's", ref.Messages)
	}
	z := s.API.Zones["example.org."]
	if len(z.RecordSets) != 1 || s.API.Gen != 1 || len(s.API.Changes) != 1 {
		t.Errorf("refused batch left %d record sets, gen %d, %d changes; want 1, 1, 1", len(z.RecordSets), s.API.Gen, len(s.API.Changes))
	}
	if _, ok := s.API.Change("C2"); ok {
		t.Error("a refused batch is in the change log")
	}
	if ci, ok := s.API.Change("C1"); !ok || ci.Gen != 1 || !ci.Submitted.Equal(t0) {
		t.Errorf("change C1: %+v %t, want gen 1 at %v", ci, ok, t0)
	}
}

func TestAPIDeleteNeedsEveryValue(t *testing.T) {
	s := NewState()
	if err := s.Apply(1, batch("C1", RecordChange{"CREATE", aRS("a.example.org", "192.0.2.1", "x")})); err != nil {
		t.Fatal(err)
	}
	if err := s.Apply(2, batch("C2", RecordChange{"DELETE", aRS("a.example.org", "192.0.2.9", "x")})); err == nil || !strings.Contains(err.Error(), "do not match") {
		t.Fatalf("delete with another value: %v, want a refusal saying the values do not match", err)
	}
	if err := s.Apply(3, batch("C3", RecordChange{"UPSERT", aRS("a.example.org.", "192.0.2.9", "x")})); err != nil {
		t.Fatal(err)
	}
	if err := s.Apply(4, batch("C4", RecordChange{"DELETE", aRS("A.EXAMPLE.ORG", "192.0.2.9", "x")})); err != nil {
		t.Fatalf("delete with the upserted values: %v", err)
	}
	if len(s.API.Zones) != 0 || s.API.Gen != 4 {
		t.Errorf("after the delete: zones %v, gen %d; want none, 4", s.API.Zones, s.API.Gen)
	}
}

func TestAPIHealthCheckLifecycle(t *testing.T) {
	s := NewState()
	port := int64(80)
	hc := &APIHealthCheck{HealthCheck: route53.HealthCheck{Id: "hc1", HealthCheckConfig: route53.HealthCheckConfig{Type: "TCP", IPAddress: "192.0.2.1", Port: &port}}, CallerReference: "ref"}
	if err := s.Apply(1, apiCmd(&APICommand{CreateCheck: hc})); err != nil {
		t.Fatal(err)
	}
	again := *hc
	again.Id = "hc2"
	if err := s.Apply(2, apiCmd(&APICommand{CreateCheck: &again})); err == nil || err.(*Refusal).Code != CodeHealthCheckExists {
		t.Errorf("a second check with the caller reference: %v, want HealthCheckAlreadyExists", err)
	}
	rs := aRS("a.example.org", "192.0.2.1", "w")
	rs.HealthCheckId = "nope"
	if err := s.Apply(3, batch("C3", RecordChange{"CREATE", rs})); err == nil || !strings.Contains(err.Error(), "no such health check") {
		t.Errorf("a record set naming an unknown check: %v, want refused", err)
	}
	rs.HealthCheckId = "hc1"
	if err := s.Apply(4, batch("C4", RecordChange{"CREATE", rs})); err != nil {
		t.Fatal(err)
	}
	if err := s.Apply(5, apiCmd(&APICommand{DeleteCheck: "hc1"})); err == nil || err.(*Refusal).Code != CodeHealthCheckInUse {
		t.Errorf("deleting a check in use: %v, want HealthCheckInUse", err)
	}
	up := *hc
	up.Version = 7
	if err := s.Apply(6, apiCmd(&APICommand{UpdateCheck: &up})); err == nil || err.(*Refusal).Code != CodeHealthCheckVersion {
		t.Errorf("update at a stale version: %v, want HealthCheckVersionMismatch", err)
	}
	up.Version = 1
	up.HealthCheckConfig.IPAddress = "192.0.2.2"
	if err := s.Apply(7, apiCmd(&APICommand{UpdateCheck: &up})); err != nil {
		t.Fatal(err)
	}
	if got := s.API.HealthChecks["hc1"]; got.Version != 2 || got.HealthCheckConfig.IPAddress != "192.0.2.2" || got.CallerReference != "ref" {
		t.Errorf("after the update: %+v, want version 2 at 192.0.2.2", got)
	}
}

func TestAPIInSyncNeedsEveryMember(t *testing.T) {
	s := NewState()
	if err := s.Apply(5, batch("C1", RecordChange{"CREATE", aRS("a.example.org", "192.0.2.1", "")})); err != nil {
		t.Fatal(err)
	}
	members := []string{"dns-a", "dns-b"}
	if s.API.InSync(5, members) {
		t.Fatal("in sync before any member said it serves the change")
	}
	serve := func(member string, gen uint64) {
		if err := s.Apply(s.Index+1, &Command{Time: t0, Member: member, API: &APICommand{Serve: gen}}); err != nil {
			t.Fatal(err)
		}
	}
	serve("dns-a", 5)
	if s.API.InSync(5, members) {
		t.Error("in sync with one of two members")
	}
	serve("dns-b", 5)
	serve("dns-b", 3) // an older generation said late does not go back
	if !s.API.InSync(5, members) || s.API.Gen != 5 {
		t.Errorf("not in sync once both serve it (serves %v, gen %d)", s.API.Serves, s.API.Gen)
	}
}

func TestAPIPreviewLeavesTheStateAlone(t *testing.T) {
	s := NewState()
	if err := s.Apply(1, batch("C1", RecordChange{"CREATE", aRS("a.example.org", "192.0.2.1", "")})); err != nil {
		t.Fatal(err)
	}
	next, err := s.API.Preview(&APICommand{ChangeID: "C2", Zone: "example.org.", Records: []RecordChange{{"DELETE", aRS("a.example.org", "192.0.2.1", "")}, {"CREATE", aRS("b.example.org", "192.0.2.2", "")}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := next.Zones["example.org."].RecordSets[RecordKey(&route53.ResourceRecordSet{Name: "b.example.org.", Type: "A"})]; !ok {
		t.Error("the preview does not hold the created record set")
	}
	if len(s.API.Zones["example.org."].RecordSets) != 1 || s.API.Gen != 1 {
		t.Error("the preview changed the state")
	}
}
