package history

import (
	"fmt"
	"testing"
	"time"
)

// TestTimeline: the slots of a span say where the check was unhealthy, where it had
// no probe, and its average latency; changes in the span are counted.
func TestTimeline(t *testing.T) {
	s := New()
	now := epoch.Add(time.Hour)
	for m := range 60 {
		at := epoch.Add(time.Duration(m) * time.Minute)
		switch m {
		case 40:
			s.Change("fp", "web", at, true, "down", nil)
		case 45:
			s.Change("fp", "web", at, false, "up", nil)
		}
		if m >= 20 && m < 30 {
			continue // no probes for ten minutes
		}
		s.Probe("fp", "web", at, m < 40 || m >= 45, time.Duration(m)*time.Millisecond)
	}
	tl, ok := s.Timeline("fp", now, time.Hour, 6) // 10-minute slots
	if !ok {
		t.Fatal("no timeline")
	}
	if want := []int8{0, 0, -1, 0, 1, 0}; fmt.Sprint(tl.Slots) != fmt.Sprint(want) {
		t.Errorf("slots %v, want %v", tl.Slots, want)
	}
	if tl.Changes != 2 {
		t.Errorf("%d changes, want 2", tl.Changes)
	}
	if got := tl.Latency[0]; got != 4.5 { // 0..9 ms
		t.Errorf("first slot's latency %v ms, want 4.5", got)
	}
	if tl.Latency[2] != -1 {
		t.Errorf("a slot with no probe has latency %v, want -1", tl.Latency[2])
	}
	if _, ok := s.Timeline("other", now, time.Hour, 6); ok {
		t.Error("a check with no history has a timeline")
	}
}

// TestLatest returns the newest changes across the wanted checks, newest first,
// with the status each changed from.
func TestLatest(t *testing.T) {
	s := New()
	for i := range 30 {
		fp := fmt.Sprint("fp", i%3)
		s.Change(fp, fmt.Sprint("c", i%3), epoch.Add(time.Duration(i)*time.Second), (i/3)%2 == 0, fmt.Sprint("r", i), nil)
	}
	got := s.Latest(5, func(fp string) (string, bool) { return "name-" + fp, fp != "fp1" })
	if len(got) != 5 {
		t.Fatalf("%d changes, want 5", len(got))
	}
	want := []string{"r29", "r27", "r26", "r24", "r23"} // fp1's (i%3 == 1) left out
	for i, c := range got {
		if c.Reason != want[i] {
			t.Errorf("change %d: %s, want %s", i, c.Reason, want[i])
		}
		if c.Check == "name-fp1" {
			t.Errorf("change %d of an unwanted check", i)
		}
		if c.From == c.To {
			t.Errorf("change %d from %s to %s", i, c.From, c.To)
		}
	}
}

// BenchmarkLatestOf10000 finds the 20 latest changes among 10,000 checks of 64
// changes each, as the status page does for its recent changes.
func BenchmarkLatestOf10000(b *testing.B) {
	s := New()
	flap(s, 10_000, 32*time.Minute, 30*time.Second, 1)
	all := func(string) (string, bool) { return "c", true }
	b.ResetTimer()
	for range b.N {
		s.Latest(20, all)
	}
}
