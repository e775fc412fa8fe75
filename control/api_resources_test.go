package control

import (
	"errors"
	"slices"
	"testing"

	"github.com/healthroute/healthroute/route53"
)

func resourceCmd(c APIResourceCommand) *Command { return apiCmd(&APICommand{APIResourceCommand: c}) }

func refusalCode(err error) string {
	var r *Refusal
	if errors.As(err, &r) {
		return r.Code
	}
	return ""
}

// TestAPIResourcesPreviewLeavesTheStateAlone previews a change of each kind of
// API resource and checks that the state it was previewed on is unchanged: the
// resources are replaced whole, never changed in place.
func TestAPIResourcesPreviewLeavesTheStateAlone(t *testing.T) {
	s := NewState()
	steps := []APIResourceCommand{
		{CreateZone: &APIHostedZone{Name: "team.example.org.", CallerReference: "z1"}},
		{CreateCidr: &APICidrCollection{Id: "c1", Name: "offices", CallerReference: "c1"}},
		{ChangeCidr: &CidrChange{Id: "c1", Changes: []CidrLocationChange{{Location: "paris", Action: "PUT", Blocks: []string{"198.51.100.0/24"}}}}},
		{CreatePolicy: &route53.TrafficPolicy{Id: "p1", Version: 1, Name: "site", Type: "A", Document: "{}"}},
		{CreateInstance: &APIPolicyInstance{Zone: "example.org.", Record: route53.PolicyRecord{Id: "i1", Name: "www.example.org.", TTL: 60, TrafficPolicyId: "p1", TrafficPolicyVersion: 1}}},
	}
	for i, c := range steps {
		if err := s.Apply(uint64(i+1), resourceCmd(c)); err != nil {
			t.Fatalf("step %d: %v", i+1, err)
		}
	}
	for _, c := range []APIResourceCommand{
		{ChangeCidr: &CidrChange{Id: "c1", Changes: []CidrLocationChange{{Location: "paris", Action: "PUT", Blocks: []string{"203.0.113.0/24"}}}}},
		{CreatePolicy: &route53.TrafficPolicy{Id: "p1", Version: 2, Type: "A", Document: "{}"}},
		{UpdateInstance: &APIPolicyInstance{Record: route53.PolicyRecord{Id: "i1", TTL: 30, TrafficPolicyId: "p1", TrafficPolicyVersion: 1}}},
		{DeleteZone: "team.example.org."},
	} {
		if _, err := s.API.Preview(&APICommand{APIResourceCommand: c}); err != nil {
			t.Fatalf("preview %+v: %v", c, err)
		}
	}
	a := s.API
	if !slices.Equal(a.Cidrs["c1"].Locations["paris"], []string{"198.51.100.0/24"}) || a.Cidrs["c1"].Version != 2 {
		t.Errorf("the previews changed the collection: %+v", a.Cidrs["c1"])
	}
	if len(a.Policies["p1"].Versions) != 1 || a.Policies["p1"].Latest != 1 {
		t.Errorf("the previews changed the policy: %+v", a.Policies["p1"])
	}
	if a.Instances["i1"].Record.TTL != 60 || a.Hosted["team.example.org."] == nil {
		t.Errorf("the previews changed the instance or the hosted zone: %+v %+v", a.Instances["i1"], a.Hosted)
	}
}

// TestAPIResourcesRefusedWithRoute53Codes: what Route 53 refuses is refused by
// the state machine itself, whatever the member that checked the call first saw.
func TestAPIResourcesRefusedWithRoute53Codes(t *testing.T) {
	s := NewState()
	apply := func(i int, c APIResourceCommand) error { return s.Apply(uint64(i), resourceCmd(c)) }
	if err := apply(1, APIResourceCommand{CreateCidr: &APICidrCollection{Id: "c1", Name: "offices", CallerReference: "c1"}}); err != nil {
		t.Fatal(err)
	}
	if err := apply(2, APIResourceCommand{CreatePolicy: &route53.TrafficPolicy{Id: "p1", Version: 1, Name: "site", Type: "A"}}); err != nil {
		t.Fatal(err)
	}
	if err := apply(3, APIResourceCommand{CreateZone: &APIHostedZone{Name: "team.example.org.", CallerReference: "z1"}}); err != nil {
		t.Fatal(err)
	}
	if err := s.Apply(4, &Command{Time: t0, API: &APICommand{ChangeID: "C1", Zone: "team.example.org.", Records: []RecordChange{{"CREATE", aRS("www.team.example.org", "192.0.2.1", "")}},
		APIResourceCommand: APIResourceCommand{Created: true}}}); err != nil {
		t.Fatal(err)
	}
	for i, tc := range []struct {
		c    APIResourceCommand
		code string
	}{
		{APIResourceCommand{CreateCidr: &APICidrCollection{Id: "c2", Name: "offices", CallerReference: "c2"}}, CodeCidrCollectionExists},
		{APIResourceCommand{ChangeCidr: &CidrChange{Id: "c1", Version: 7, Changes: []CidrLocationChange{{Location: "a", Action: "PUT", Blocks: []string{"192.0.2.0/24"}}}}}, CodeCidrCollectionVersion},
		{APIResourceCommand{ChangeCidr: &CidrChange{Id: "nope"}}, CodeNoSuchCidrCollection},
		{APIResourceCommand{CreatePolicy: &route53.TrafficPolicy{Id: "p1", Version: 3, Type: "A"}}, "ConcurrentModification"},
		{APIResourceCommand{CreatePolicy: &route53.TrafficPolicy{Id: "p1", Version: 2, Type: "AAAA"}}, "InvalidTrafficPolicyDocument"},
		{APIResourceCommand{CreateInstance: &APIPolicyInstance{Zone: "example.org.", Record: route53.PolicyRecord{Id: "i1", Name: "a.example.org.", TrafficPolicyId: "p1", TrafficPolicyVersion: 2}}}, CodeNoSuchTrafficPolicy},
		{APIResourceCommand{DeleteZone: "team.example.org."}, CodeHostedZoneNotEmpty},
		{APIResourceCommand{CreateZone: &APIHostedZone{Name: "other.example.org.", CallerReference: "z1"}}, CodeHostedZoneExists},
	} {
		if err := apply(10+i, tc.c); refusalCode(err) != tc.code {
			t.Errorf("%+v: %v, want %s", tc.c, err, tc.code)
		}
	}
	// A batch for a created zone deleted meanwhile is refused.
	s2 := NewState()
	err := s2.Apply(1, &Command{Time: t0, API: &APICommand{ChangeID: "C1", Zone: "gone.example.org.", Records: []RecordChange{{"CREATE", aRS("www.gone.example.org", "192.0.2.1", "")}},
		APIResourceCommand: APIResourceCommand{Created: true}}})
	if refusalCode(err) != CodeNoSuchHostedZone {
		t.Errorf("a batch for a deleted created zone: %v, want %s", err, CodeNoSuchHostedZone)
	}
}
