package control

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

func cnameRS(name, target string) RecordChange {
	rs := aRS(name, target, "")
	rs.Type = "CNAME"
	return RecordChange{"CREATE", rs}
}

// Two batches each valid against the state they were checked on (a CNAME and an
// A record at one name), applied in the leader's order: the second is refused by
// the state machine, so the zone still converts.
func TestRacingBatchesCannotLeaveAZoneThatDoesNotConvert(t *testing.T) {
	s := NewState()
	cname := batch("C1", cnameRS("race0.example.org", "target.example.net."))
	a := batch("C2", RecordChange{"CREATE", aRS("race0.example.org", "192.0.2.1", "")})
	if _, err := s.API.Preview(a.API); err != nil {
		t.Fatalf("the A batch alone: %v", err)
	}
	if err := s.Apply(1, cname); err != nil {
		t.Fatal(err)
	}
	err := s.Apply(2, a)
	var ref *Refusal
	if !errors.As(err, &ref) || ref.Code != CodeInvalidChangeBatch || len(ref.Messages) != 1 {
		t.Fatalf("the A batch after the CNAME: %v, want InvalidChangeBatch", err)
	}
	if err := s.API.Convertible("example.org.", nil); err != nil || len(s.API.Zones["example.org."].RecordSets) != 1 {
		t.Fatalf("the zone after the refusal: %v, %d record sets", err, len(s.API.Zones["example.org."].RecordSets))
	}
	// A health check may not take the name of one of the Corefile's checks.
	hc := &APIHealthCheck{CallerReference: "r1"}
	hc.Id = "web"
	if err := s.Apply(3, apiCmd(&APICommand{CreateCheck: hc})); err != nil {
		t.Fatal(err)
	}
	err = s.Apply(4, apiCmd(&APICommand{ChangeID: "C4", Zone: "example.org.", Reserved: []string{"web"},
		Records: []RecordChange{{"CREATE", aRS("b.example.org", "192.0.2.2", "")}}}))
	if err == nil || !strings.Contains(err.Error(), "health check web has the name of a check of the Corefile") {
		t.Fatalf("a batch with a reserved check name: %v", err)
	}
}

// The same race through two members of three, concurrently, 5 times: exactly one
// batch of each pair is applied, and every member holds the same zone.
func TestRacingBatchesThroughTwoMembers(t *testing.T) {
	_, nodes := group(t, 3)
	waitFor(t, 10*time.Second, "a leader", func() bool { return hasLeader(nodes...) })
	elections := false // a pair refused for want of a leader: whether it left a set is the log's to say
	for round, tries := 0, 0; round < 5; tries++ {
		if tries == 20 {
			t.Fatalf("%d clean rounds of 20", round)
		}
		name := fmt.Sprintf("race%d.example.org", tries)
		reqs := []Request{
			{Token: "api", Member: "m1", API: batch("C"+name+"1", cnameRS(name, "target.example.net.")).API},
			{Token: "api", Member: "m2", API: batch("C"+name+"2", RecordChange{"CREATE", aRS(name, "192.0.2.1", "")}).API},
		}
		errs := make([]error, 2)
		var wg sync.WaitGroup
		for i := range reqs {
			wg.Go(func() { errs[i] = nodes[i+1].Change(context.Background(), reqs[i]) })
		}
		wg.Wait()
		var qe *QuorumError
		if errors.As(errs[0], &qe) || errors.As(errs[1], &qe) { // an election on a loaded machine
			elections = true
			continue
		}
		if (errs[0] == nil) == (errs[1] == nil) || (!errors.Is(errs[0], ErrRefused) && !errors.Is(errs[1], ErrRefused)) {
			t.Fatalf("round %d: %v / %v, want exactly one applied and the other refused", round, errs[0], errs[1])
		}
		round++
	}
	waitFor(t, 2*time.Second, "every member holds the same record sets, 5 unless an election left more, and the zone converts", func() bool {
		want := -1
		for _, n := range nodes {
			a := n.API()
			if a == nil || a.Convertible("example.org.", nil) != nil {
				return false
			}
			got := len(a.Zones["example.org."].RecordSets)
			if want >= 0 && got != want || got < 5 || !elections && got != 5 {
				return false
			}
			want = got
		}
		return true
	})
}

// A signed batch the state machine refuses because the zone would not convert is
// refused with InvalidChangeBatch and the importer's message, and its request is
// remembered as decided (refused): sent again, it is refused as a replay.
func TestSignedBatchRefusedForConversionIsRemembered(t *testing.T) {
	s := NewState()
	if err := s.Apply(1, batch("C1", cnameRS("x.example.org", "target.example.net."))); err != nil {
		t.Fatal(err)
	}
	cmd := batch("C2", RecordChange{"CREATE", aRS("x.example.org", "192.0.2.1", "")})
	cmd.API.Request = &APIRequest{Digest: "d1", Signed: t0}
	var ref *Refusal
	if err := s.Apply(2, cmd); !errors.As(err, &ref) || ref.Code != CodeInvalidChangeBatch || len(ref.Messages) != 1 || !strings.Contains(ref.Messages[0], "CNAME") {
		t.Fatalf("the A batch beside the CNAME: %v, want InvalidChangeBatch with the importer's message", err)
	}
	if d, ok := s.API.Replayed("d1"); !ok || d.Answer != "" {
		t.Fatalf("the refused request remembered: %v %+v, want remembered as refused", ok, d)
	}
	if err := s.Apply(3, cmd); refusalCode(err) != CodeRequestReplayed {
		t.Fatalf("the refused request sent again: %v, want %s", err, CodeRequestReplayed)
	}
	if n := len(s.API.Zones["example.org."].RecordSets); n != 1 {
		t.Fatalf("%d record sets, want the CNAME alone", n)
	}
}

// A batch converts the sets at the names it changes and those aliases join to
// them, not the whole zone: a name the zone held that does not convert (as racing
// batches left it before the state machine checked conversions) does not refuse
// a batch elsewhere, and a batch at that name that leaves it broken is refused.
func TestBatchConvertsWhatItAffects(t *testing.T) {
	s := NewState()
	cname := cnameRS("broken.example.org.", "target.example.net.").RecordSet
	a := aRS("broken.example.org.", "192.0.2.1", "")
	s.API = &APIState{Zones: map[string]*APIZone{"example.org.": {RecordSets: map[string]StoredSet{
		RecordKey(&cname): StoreSet(cname), RecordKey(&a): StoreSet(a)}}}}
	if err := s.API.Convertible("example.org.", nil); err == nil {
		t.Fatal("the zone held converts; the test needs one that does not")
	}
	if err := s.Apply(1, batch("C1", RecordChange{"CREATE", aRS("other.example.org", "192.0.2.2", "")})); err != nil {
		t.Fatalf("a batch elsewhere in the zone: %v", err)
	}
	if err := s.Apply(2, batch("C2", RecordChange{"UPSERT", aRS("broken.example.org", "192.0.2.3", "")})); refusalCode(err) != CodeInvalidChangeBatch {
		t.Fatalf("a batch leaving the broken name broken: %v, want InvalidChangeBatch", err)
	}
	if err := s.Apply(3, batch("C3", RecordChange{"DELETE", cname})); err != nil {
		t.Fatalf("a batch repairing the zone: %v", err)
	}
	if err := s.API.Convertible("example.org.", nil); err != nil {
		t.Fatalf("the repaired zone: %v", err)
	}
}
