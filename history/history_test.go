package history

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

var epoch = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// TestChangesInOrderAcrossSave flips a check 20 times and reads back 20 changes, in
// order, with their times, reasons and members; saved and loaded into a new store
// (a restart), they are all still there, and so are the minutes.
func TestChangesInOrderAcrossSave(t *testing.T) {
	s := New()
	for i := range 20 {
		at := epoch.Add(time.Duration(i) * 90 * time.Second)
		s.Probe("fp", "web", at, i%2 == 1, 5*time.Millisecond)
		s.Change("fp", "web", at, i%2 == 0, fmt.Sprintf("reason %d", i), []string{"dns1", "dns2"})
	}
	check := func(s *Store) {
		t.Helper()
		h, ok := s.Get("fp", "web")
		if !ok || len(h.Changes) != 20 || h.Dropped != 0 {
			t.Fatalf("Get: ok %v, %d changes (%d dropped), want 20", ok, len(h.Changes), h.Dropped)
		}
		for i, c := range h.Changes {
			at := epoch.Add(time.Duration(i) * 90 * time.Second)
			from, to := "healthy", "unhealthy"
			if i%2 == 1 {
				from, to = to, from
			}
			if !c.Time.Equal(at) || c.From != from || c.To != to || c.Reason != fmt.Sprintf("reason %d", i) || strings.Join(c.Members, " ") != "dns1 dns2" {
				t.Errorf("change %d: %+v, want at %v from %s to %s for reason %d seen by dns1 dns2", i, c, at, from, to, i)
			}
		}
		// 20 probes 90 s apart: each in a minute of its own (a minute with no
		// probe takes no sample).
		if n := len(h.Minutes); n != 20 {
			t.Errorf("%d minutes, want 20", n)
		}
		probes := 0
		for _, m := range h.Minutes {
			probes += m.Probes
		}
		if probes != 20 {
			t.Errorf("the minutes hold %d probes, want 20", probes)
		}
	}
	check(s)
	dir := t.TempDir()
	if err := s.Save(dir); err != nil {
		t.Fatal(err)
	}
	restarted := New()
	if err := restarted.Load(dir); err != nil {
		t.Fatal(err)
	}
	check(restarted)
	// The ring continues where it left off after a load.
	restarted.Change("fp", "web", epoch.Add(time.Hour), true, "later", nil)
	if h, _ := restarted.Get("fp", "web"); len(h.Changes) != 21 || h.Changes[20].Reason != "later" || h.Changes[20].From != "healthy" || h.Changes[20].To != "unhealthy" {
		t.Errorf("after a change following the load: %d changes, last %+v", len(h.Changes), h.Changes[len(h.Changes)-1])
	}
}

// TestLoadWithoutFile: a history directory without a saved file is empty, no error;
// a file that is not a history, or is cut short, is an error naming it.
func TestLoadWithoutFile(t *testing.T) {
	dir := t.TempDir()
	s := New()
	if err := s.Load(dir); err != nil || s.Len() != 0 {
		t.Fatalf("Load of an empty directory: %v, %d checks", err, s.Len())
	}
	writeFile(t, dir, "not a history")
	if err := s.Load(dir); err == nil || !strings.Contains(err.Error(), FileName) {
		t.Fatalf("Load of a garbage file: %v, want an error naming %s", err, FileName)
	}
	// A file cut short (a full disk) is refused whole, not half read.
	full := New()
	for i := range 10 {
		full.Change(fmt.Sprint("fp", i), "web", epoch.Add(time.Duration(i)*time.Minute), i%2 == 0, "reason", nil)
	}
	if err := full.Save(dir); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, FileName))
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, string(b[:len(b)/2]))
	if err := s.Load(dir); err == nil || s.Len() != 0 {
		t.Fatalf("Load of a truncated file: %v, %d checks loaded; want an error and none", err, s.Len())
	}
}

// TestMemoryWithinBudget runs 10,000 checks through an hour of flapping (a probe
// every 30 s, Route 53's default interval, each one a change of status, with
// long reasons and member lists) and checks
// that each check's history holds at most Budget bytes, keeps the latest
// MaxChanges changes and counts the rest as dropped.
func TestMemoryWithinBudget(t *testing.T) {
	const checks = 10_000
	s := New()
	flap(s, checks, time.Hour, 30*time.Second, 1)
	worst := 0
	for i := range checks {
		fp := fmt.Sprint("fp", i)
		if n := s.Bytes(fp); n > worst {
			worst = n
		}
	}
	if worst > Budget {
		t.Errorf("a check's history holds %d bytes, over the budget of %d", worst, Budget)
	}
	h, _ := s.Get("fp0", "c0")
	if len(h.Changes) != MaxChanges || h.Dropped != 120-MaxChanges {
		t.Errorf("%d changes kept, %d dropped after 120; want %d kept", len(h.Changes), h.Dropped, MaxChanges)
	}
	if len(h.Minutes) != 60 {
		t.Errorf("%d minutes after an hour, want 60", len(h.Minutes))
	}
	for _, c := range h.Changes {
		if len(c.Reason) > MaxReason {
			t.Fatalf("a reason of %d bytes is kept, over %d", len(c.Reason), MaxReason)
		}
	}
	t.Logf("after an hour of flapping, the largest history holds %d bytes (budget %d)", worst, Budget)
}

// TestMinutesWrapAfterADay: past 24 hours the oldest minutes go and the ring holds
// the latest MaxMinutes, oldest first.
func TestMinutesWrapAfterADay(t *testing.T) {
	s := New()
	for m := range MaxMinutes + 90 {
		s.Probe("fp", "web", epoch.Add(time.Duration(m)*time.Minute), m%7 != 0, time.Duration(m)*time.Millisecond)
	}
	h, _ := s.Get("fp", "web")
	if len(h.Minutes) != MaxMinutes {
		t.Fatalf("%d minutes, want %d", len(h.Minutes), MaxMinutes)
	}
	if first := h.Minutes[0].Time; !first.Equal(epoch.Add(90 * time.Minute)) {
		t.Errorf("oldest minute %v, want %v", first, epoch.Add(90*time.Minute))
	}
	for i := 1; i < len(h.Minutes); i++ {
		if !h.Minutes[i].Time.After(h.Minutes[i-1].Time) {
			t.Fatalf("minutes out of order at %d: %v after %v", i, h.Minutes[i].Time, h.Minutes[i-1].Time)
		}
	}
	if s.Bytes("fp") > Budget {
		t.Errorf("%d bytes after a day, over the budget of %d", s.Bytes("fp"), Budget)
	}
}

// BenchmarkHistoryMemory measures the heap that 10,000 checks' histories hold after
// an hour of flapping and after a full day of one probe a minute.
func BenchmarkHistoryMemory(b *testing.B) {
	for _, tc := range []struct {
		name        string
		span, every time.Duration
		changeEvery int
	}{{"hour-flapping", time.Hour, 10 * time.Second, 3}, {"day", 24 * time.Hour, time.Minute, 60}} {
		b.Run(tc.name, func(b *testing.B) {
			const checks = 10_000
			for range b.N {
				var before, after runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&before)
				s := New()
				flap(s, checks, tc.span, tc.every, tc.changeEvery)
				runtime.GC()
				runtime.ReadMemStats(&after)
				b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/checks, "heap-bytes/check")
				runtime.KeepAlive(s)
			}
		})
	}
}

// flap records span of probes every every for n checks, a status change every
// changeEvery probes, with a reason longer than MaxReason and three members.
func flap(s *Store, n int, span, every time.Duration, changeEvery int) {
	reason := errors.New(strings.Repeat("connect: connection refused; ", 10)).Error()
	members := []string{"checker-eu-west-1", "checker-us-east-1", "checker-ap-south-1"}
	fps, names := make([]string, n), make([]string, n)
	for i := range fps {
		fps[i], names[i] = fmt.Sprint("fp", i), fmt.Sprint("c", i)
	}
	step := 0
	for at := epoch; at.Before(epoch.Add(span)); at = at.Add(every) {
		for i, fp := range fps {
			ok := step%2 == 0
			s.Probe(fp, names[i], at, ok, time.Duration(step%50)*time.Millisecond)
			if step%changeEvery == changeEvery-1 {
				s.Change(fp, names[i], at, (step/changeEvery)%2 == 0, reason, members)
			}
		}
		step++
	}
}

// BenchmarkSaveDay10000 saves 10,000 checks' full day of history (one probe a
// minute, a change an hour) and reports the file's size.
func BenchmarkSaveDay10000(b *testing.B) {
	s := New()
	flap(s, 10_000, 24*time.Hour, time.Minute, 60)
	dir := b.TempDir()
	b.ResetTimer()
	for range b.N {
		if err := s.Save(dir); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	fi, err := os.Stat(filepath.Join(dir, FileName))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(fi.Size()), "file-bytes")
}
