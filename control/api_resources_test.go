package control

import (
	"slices"
	"testing"

	"github.com/healthroute/healthroute/route53"
)

func resourceCmd(c APIResourceCommand) *Command { return apiCmd(&APICommand{APIResourceCommand: c}) }

// valueDocument is a traffic policy that answers one value.
const valueDocument = `{"AWSPolicyFormatVersion":"2015-10-01","RecordType":"A","StartEndpoint":"e","Endpoints":{"e":{"Type":"value","Value":"192.0.2.7"}}}`

// TestAPIResourcesPreviewLeavesTheStateAlone previews a change of each kind of
// API resource and checks that the state it was previewed on is unchanged: the
// resources are replaced whole, never changed in place.
func TestAPIResourcesPreviewLeavesTheStateAlone(t *testing.T) {
	s := NewState()
	steps := []APIResourceCommand{
		{CreateZone: &APIHostedZone{Name: "team.example.org.", CallerReference: "z1"}},
		{CreateCidr: &APICidrCollection{Id: "c1", Name: "offices", CallerReference: "c1"}},
		{ChangeCidr: &CidrChange{Id: "c1", Changes: []CidrLocationChange{{Location: "paris", Action: "PUT", Blocks: []string{"198.51.100.0/24"}}}}},
		{CreatePolicy: &route53.TrafficPolicy{Id: "p1", Version: 1, Name: "site", Type: "A", Document: valueDocument}},
		{CreateInstance: &APIPolicyInstance{Zone: "example.org.", Record: route53.PolicyRecord{Id: "i1", Name: "www.example.org.", TTL: 60, TrafficPolicyId: "p1", TrafficPolicyVersion: 1}}},
	}
	for i, c := range steps {
		if err := s.Apply(uint64(i+1), resourceCmd(c)); err != nil {
			t.Fatalf("step %d: %v", i+1, err)
		}
	}
	for _, c := range []APIResourceCommand{
		{ChangeCidr: &CidrChange{Id: "c1", Changes: []CidrLocationChange{{Location: "paris", Action: "PUT", Blocks: []string{"203.0.113.0/24"}}}}},
		{CreatePolicy: &route53.TrafficPolicy{Id: "p1", Version: 2, Type: "A", Document: valueDocument}},
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
		{APIResourceCommand{CreateZone: &APIHostedZone{Name: "www.team.example.org.", CallerReference: "z9"}}, CodeConflictingDomain},
	} {
		if err := apply(10+i, tc.c); refusalCode(err) != tc.code {
			t.Errorf("%+v: %v, want %s", tc.c, err, tc.code)
		}
	}
	// A batch of the zone above that names a name of the created zone is refused
	// by the state machine, whatever the member saw.
	err := s.Apply(30, &Command{Time: t0, API: &APICommand{ChangeID: "C2", Zone: "example.org.", Records: []RecordChange{{"CREATE", aRS("api.team.example.org", "192.0.2.1", "")}}}})
	if refusalCode(err) != CodeInvalidChangeBatch {
		t.Errorf("a batch naming a created zone's name: %v, want %s", err, CodeInvalidChangeBatch)
	}
	// A batch for a created zone deleted meanwhile is refused.
	s2 := NewState()
	err = s2.Apply(1, &Command{Time: t0, API: &APICommand{ChangeID: "C1", Zone: "gone.example.org.", Records: []RecordChange{{"CREATE", aRS("www.gone.example.org", "192.0.2.1", "")}},
		APIResourceCommand: APIResourceCommand{Created: true}}})
	if refusalCode(err) != CodeNoSuchHostedZone {
		t.Errorf("a batch for a deleted created zone: %v, want %s", err, CodeNoSuchHostedZone)
	}
}

// TestPolicyInstanceConvertedInTheStateMachine: an instance after which its zone
// would not convert is refused by the state machine, as a batch is, so an
// instance and a batch racing through two members cannot break the zone; a
// batch that would break an instance's zone is refused too.
func TestPolicyInstanceConvertedInTheStateMachine(t *testing.T) {
	s := NewState()
	ttl := int64(60)
	cname := route53.ResourceRecordSet{Name: "www.example.org.", Type: "CNAME", TTL: &ttl, ResourceRecords: []route53.ResourceRecord{{Value: "elsewhere.example.net."}}}
	if err := s.Apply(1, resourceCmd(APIResourceCommand{CreatePolicy: &route53.TrafficPolicy{Id: "p1", Version: 1, Name: "site", Type: "A", Document: valueDocument}})); err != nil {
		t.Fatal(err)
	}
	if err := s.Apply(2, &Command{Time: t0, API: &APICommand{ChangeID: "C1", Zone: "example.org.", Records: []RecordChange{{"CREATE", cname}}}}); err != nil {
		t.Fatal(err)
	}
	in := func(id, name string) APIResourceCommand {
		return APIResourceCommand{CreateInstance: &APIPolicyInstance{Zone: "example.org.", Record: route53.PolicyRecord{Id: id, Name: name, TTL: 60, TrafficPolicyId: "p1", TrafficPolicyVersion: 1}}}
	}
	if err := s.Apply(3, resourceCmd(in("i1", "www.example.org."))); refusalCode(err) != CodeInvalidChangeBatch {
		t.Errorf("an instance beside a CNAME: %v, want %s", err, CodeInvalidChangeBatch)
	}
	if s.API.Instances["i1"] != nil {
		t.Errorf("the refused instance is held: %+v", s.API.Instances["i1"])
	}
	if err := s.Apply(4, resourceCmd(in("i2", "api.example.org."))); err != nil {
		t.Fatal(err)
	}
	cname.Name = "api.example.org."
	if err := s.Apply(5, &Command{Time: t0, API: &APICommand{ChangeID: "C2", Zone: "example.org.", Records: []RecordChange{{"CREATE", cname}}}}); refusalCode(err) != CodeInvalidChangeBatch {
		t.Errorf("a CNAME beside an instance: %v, want %s", err, CodeInvalidChangeBatch)
	}
}
