package control

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"
)

func signedTags(digest string, signed time.Time, now time.Time) *Command {
	return &Command{Time: now, Member: "dns-a", API: &APICommand{Tags: &TagChange{Resource: "hostedzone/Z", Add: map[string]string{"k": digest}},
		Request: &APIRequest{Digest: digest, Signed: signed}}}
}

func refusalCode(err error) string {
	var ref *Refusal
	if errors.As(err, &ref) {
		return ref.Code + ref.Rule // a safety rule's refusal has no code but the rule's name
	}
	return ""
}

// TestSignedRequestsRememberedBounded: past MaxSignedRequests the oldest is
// forgotten and the floor rises to its signed time, so it is refused as too old
// rather than applied again; the newest is refused as a replay, also after the
// state is written and read back (as at a restart).
func TestSignedRequestsRememberedBounded(t *testing.T) {
	s := NewState()
	now := t0
	for i := range MaxSignedRequests + 10 {
		signed := t0.Add(time.Duration(i) * time.Millisecond)
		if err := s.Apply(uint64(i+1), signedTags(fmt.Sprint(i), signed, now)); err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
	}
	if n := len(s.API.Replays.Decided); n != MaxSignedRequests {
		t.Errorf("%d requests remembered, want %d", n, MaxSignedRequests)
	}
	if want := t0.Add(9 * time.Millisecond); !s.API.ReplayFloor().Equal(want) {
		t.Errorf("floor %v, want the 10th request's signed time %v", s.API.ReplayFloor(), want)
	}
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	read := NewState()
	if err := json.Unmarshal(b, read); err != nil {
		t.Fatal(err)
	}
	for _, st := range []*State{s, read} {
		if err := st.Apply(st.Index+1, signedTags("0", t0, now)); refusalCode(err) != CodeRequestTooOld {
			t.Errorf("the first request again: %v, want %s", err, CodeRequestTooOld)
		}
		last := fmt.Sprint(MaxSignedRequests + 9)
		if err := st.Apply(st.Index+1, signedTags(last, t0.Add(time.Duration(MaxSignedRequests+9)*time.Millisecond), now)); refusalCode(err) != CodeRequestReplayed {
			t.Errorf("the last request again: %v, want %s", err, CodeRequestReplayed)
		}
	}
}

// TestSignedRequestsForgottenAfterTheWindow: a request signed more than
// SignedWindow before a later command is forgotten, and refused as too old.
func TestSignedRequestsForgottenAfterTheWindow(t *testing.T) {
	s := NewState()
	if err := s.Apply(1, signedTags("old", t0, t0)); err != nil {
		t.Fatal(err)
	}
	later := t0.Add(SignedWindow + time.Second)
	if err := s.Apply(2, signedTags("new", later, later)); err != nil {
		t.Fatal(err)
	}
	if n := len(s.API.Replays.Decided); n != 1 {
		t.Errorf("%d requests remembered, want 1 (the old one forgotten)", n)
	}
	if err := s.Apply(3, signedTags("old", t0, later)); refusalCode(err) != CodeRequestTooOld {
		t.Errorf("the forgotten request again: %v, want %s", err, CodeRequestTooOld)
	}
}

// TestRefusedSignedRequestRemembered: a signed request the state refused is
// remembered too: sent again once the state would allow it, it is still refused.
func TestRefusedSignedRequestRemembered(t *testing.T) {
	s := NewState()
	del := &Command{Time: t0, API: &APICommand{ChangeID: "C1", Zone: "example.org.", Records: []RecordChange{{Action: "DELETE", RecordSet: aRS("a.example.org.", "192.0.2.1", "")}}}}
	del.API.Request = &APIRequest{Digest: "del", Signed: t0}
	if err := s.Apply(1, del); refusalCode(err) != CodeInvalidChangeBatch {
		t.Fatalf("deleting a missing set: %v", err)
	}
	if err := s.Apply(2, batch("C2", RecordChange{Action: "CREATE", RecordSet: aRS("a.example.org.", "192.0.2.1", "")})); err != nil {
		t.Fatal(err)
	}
	if err := s.Apply(3, del); refusalCode(err) != CodeRequestReplayed {
		t.Errorf("the refused delete sent again once the set exists: %v, want %s", err, CodeRequestReplayed)
	}
	if len(s.API.Zones["example.org."].RecordSets) != 1 {
		t.Errorf("the set was deleted by a request sent again")
	}
}
