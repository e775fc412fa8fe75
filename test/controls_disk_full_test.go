package test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestControlsLeaderDiskFull fills the leader's disk (RLIMIT_FSIZE on its
// process at 4 KiB: every write past that offset fails with EFBIG, as on a full
// disk) for 8 s while changes are made through the others. It used to exit
// ("panic: failed to save current term", raft's answer to a term it cannot
// persist) and serve no DNS until restarted. Now: it runs and answers DNS
// throughout; it steps down at its first failed append and does not lead again
// while its disk is full; the others elect a leader and acknowledge changes;
// once the disk has room it applies them and answers them, with no restart.
func TestControlsLeaderDiskFull(t *testing.T) {
	if testing.Short() {
		t.Skip("three CoreDNS processes")
	}
	f := newCtlFleet(t, 3, false)
	for i := range f.ms {
		f.start(i)
	}
	f.ready(15*time.Second, 0, 1, 2)
	full := f.leader(0, 1, 2)
	other := (full + 1) % 3
	pid := f.ms[full].srv.Cmd.Process.Pid
	if err := limitFiles(pid, 4096); err != nil {
		t.Fatal(err)
	}
	start := time.Now()

	// A change through another member: the full member, still leader, fails to
	// append it and steps down; the change waits for the new leader, or is
	// refused, and is sent again until acknowledged.
	var acked time.Duration
	for time.Since(start) < 6*time.Second {
		if code, _ := f.post(other, "/v1/controls/east", "off"); code == http.StatusOK {
			acked = time.Since(start)
			break
		}
		pause(100 * time.Millisecond)
	}
	if acked == 0 {
		t.Fatalf("no change acknowledged within 6s of the leader's disk filling\n%s", f.diag())
	}
	// Until 8 s: the full member answers DNS (its state from before) and never
	// leads again.
	answers, led := 0, 0
	for time.Since(start) < 8*time.Second {
		if processGone(pid) {
			t.Fatalf("%s exited while its disk was full:\n%s", f.ms[full].name, f.ms[full].srv.Output())
		}
		if f.answer(full) == ctlPrimary {
			answers++
		}
		if v, err := f.view(full, ""); err == nil && v.Raft.State == "Leader" {
			led++
		}
		pause(100 * time.Millisecond)
	}
	out := f.ms[full].srv.Output()
	if !strings.Contains(out, diskFull) {
		t.Fatalf("%s: no write failed (no %q in its output): the fault did nothing\n%s", f.ms[full].name, diskFull, out)
	}
	if answers == 0 || led > 0 {
		t.Fatalf("%s, its disk full: %d answers of its state, led %d times; want answers and never leading\n%s", f.ms[full].name, answers, led, f.diag())
	}
	if err := limitFiles(pid, unix.RLIM_INFINITY); err != nil {
		t.Fatal(err)
	}
	f.expect(false, true, 0, 1, 2) // the same process (never restarted) applies and answers the change
	t.Logf("change acknowledged %s after the leader's disk filled; the full member answered %d queries from its state and never led", acked.Round(time.Millisecond), answers)
}

// limitFiles sets RLIMIT_FSIZE of process pid to size bytes (RLIM_INFINITY
// lifts it): every write past that offset fails with EFBIG, as on a full disk
// (Go ignores SIGXFSZ).
func limitFiles(pid int, size uint64) error {
	return unix.Prlimit(pid, unix.RLIMIT_FSIZE, &unix.Rlimit{Cur: size, Max: unix.RLIM_INFINITY}, nil)
}
