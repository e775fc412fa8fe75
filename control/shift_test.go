package control

import (
	"testing"
	"time"
)

// TestZonalShiftLifecycleOnTheLeadersClock drives the state machine with the
// times a leader would stamp: a shift is active until its expiry, a second one on
// the resource is refused meanwhile, an update moves the expiry from the update's
// time, an ended shift can be neither updated nor cancelled.
func TestZonalShiftLifecycleOnTheLeadersClock(t *testing.T) {
	s := NewState()
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	apply := func(at time.Duration, c ShiftCommand) error {
		return s.Apply(s.Index+1, &Command{Time: t0.Add(at), Token: "k", Member: "m", Shift: &c})
	}
	if err := apply(0, ShiftCommand{Start: &ZonalShift{ID: "one", Resource: "svc.example.org.", AwayFrom: "use1-az1"}, ExpiresIn: 2 * time.Minute}); err != nil {
		t.Fatal(err)
	}
	z, _ := s.Shift("one")
	if !z.Expiry.Equal(t0.Add(2*time.Minute)) || z.Status(t0.Add(time.Minute)) != ShiftActive || len(s.ActiveShifts(t0.Add(time.Minute))) != 1 {
		t.Fatalf("started shift %+v, want active until t0+2m", z)
	}
	if err := apply(time.Minute, ShiftCommand{Start: &ZonalShift{ID: "two", Resource: "svc.example.org.", AwayFrom: "use1-az2"}, ExpiresIn: time.Minute}); refusalCode(err) != CodeShiftExists {
		t.Errorf("a second shift on an active one's resource: %v, want %s", err, CodeShiftExists)
	}
	comment := "longer"
	if err := apply(time.Minute, ShiftCommand{Update: "one", ExpiresIn: 10 * time.Minute, Comment: &comment}); err != nil {
		t.Fatal(err)
	}
	if z, _ := s.Shift("one"); !z.Expiry.Equal(t0.Add(11*time.Minute)) || z.Comment != "longer" || z.Status(t0.Add(5*time.Minute)) != ShiftActive {
		t.Errorf("updated shift %+v, want expiry t0+11m and the new comment", z)
	}
	if z, _ := s.Shift("one"); z.Status(t0.Add(11*time.Minute)) != ShiftExpired || len(s.ActiveShifts(t0.Add(11*time.Minute))) != 0 {
		t.Errorf("at its expiry the shift is %s, want EXPIRED", z.Status(t0.Add(11*time.Minute)))
	}
	if err := apply(12*time.Minute, ShiftCommand{Cancel: "one"}); refusalCode(err) != CodeShiftNotActive {
		t.Errorf("cancelling an expired shift: %v, want %s", err, CodeShiftNotActive)
	}
	if err := apply(12*time.Minute, ShiftCommand{Start: &ZonalShift{ID: "three", Resource: "svc.example.org.", AwayFrom: "use1-az2"}, ExpiresIn: time.Hour}); err != nil {
		t.Fatalf("a shift once the first expired: %v", err)
	}
	if err := apply(13*time.Minute, ShiftCommand{Cancel: "three"}); err != nil {
		t.Fatal(err)
	}
	if z, _ := s.Shift("three"); z.Status(t0.Add(13*time.Minute)) != ShiftCanceled {
		t.Errorf("cancelled shift is %s", z.Status(t0.Add(13*time.Minute)))
	}
	for _, bad := range []time.Duration{-time.Minute, MaxShiftExpiry + time.Minute} {
		if err := apply(14*time.Minute, ShiftCommand{Start: &ZonalShift{ID: "bad", Resource: "x."}, ExpiresIn: bad}); refusalCode(err) != CodeInvalidInput {
			t.Errorf("expiresIn %s: %v, want %s", bad, err, CodeInvalidInput)
		}
	}
	if err := apply(14*time.Minute, ShiftCommand{Update: "nope", ExpiresIn: time.Minute}); refusalCode(err) != CodeNoSuchShift {
		t.Errorf("updating an unknown shift: %v", err)
	}
	if n := len(s.Audit); n != 9 || s.Audit[n-1].Refused == "" || s.Audit[0].Refused != "" {
		t.Errorf("audit holds %d entries, want each of the 9 commands, refusals marked", n)
	}
}
