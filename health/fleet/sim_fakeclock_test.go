package fleet

import (
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"testing"
	"testing/synctest"
	"time"
)

// simSizeEnv selects the fake-clock simulation's size: MEMBERSxCHECKS, such as
// 200x100000 (the scale docs/fleet.md reports), or MEMBERSxCHECKSxCHECKERS (0:
// every member probes every check).
const simSizeEnv = "HEALTHROUTE_SIM_SIZE"

// TestSimulationPlacementFakeClock runs placementSim on a network in memory and a
// fake clock (testing/synctest): real memberlist and fleet code at the timers users
// get, checks on 3 checkers probed every 30 s. The clock moves on only when every
// member has done all it can, so the times measured are those of a fleet whose
// members each have a core of their own, whatever this machine has: what a process
// of 200 members on 2 cores cannot show on the wall clock. The CPU figure is the
// process's CPU per second of the fake clock, per member.
//
// By default 20 members and 2,000 checks (CI); HEALTHROUTE_SIM_SIZE=200x100000 runs
// the scale (about an hour of this machine's 2 cores and 20 GB of memory:
// go test -run FakeClock -timeout 4h ./health/fleet/).
func TestSimulationPlacementFakeClock(t *testing.T) {
	if testing.Short() {
		t.Skip("a fleet of 20 members")
	}
	z := simSize{members: 20, checks: 2000, checkers: 3, interval: 30 * time.Second}
	if s := os.Getenv(simSizeEnv); s != "" {
		n, err := fmt.Sscanf(s, "%dx%dx%d", &z.members, &z.checks, &z.checkers)
		if n < 2 || n == 2 && err != io.ErrUnexpectedEOF || n == 3 && err != nil || z.members < 2 || z.checks < 1 || z.checkers < 0 {
			t.Fatalf("%s=%q: expected MEMBERSxCHECKS[xCHECKERS], such as 200x100000 or 200x1000x0 (0: every member probes)", simSizeEnv, s)
		}
		// The members' heap is most of the machine's memory at 200 x 100,000: keep
		// the collector from letting it double.
		defer debug.SetMemoryLimit(debug.SetMemoryLimit(20 << 30))
	}
	if raceDetector && os.Getenv(simSizeEnv) == "" {
		z.checks = 300
	}
	// Agreement is polled on at most 5,000 checks, once a second of the fake clock:
	// a poll costs CPU, never time on the fake clock.
	z.stride, z.poll = coprimeStride(z.checks/5000, int(z.interval/time.Second)), time.Second
	wall, cpu0 := time.Now(), cpuTime()
	var f simFigures
	synctest.Test(t, func(t *testing.T) {
		// Run last, after every member has stopped: memberlist's probes still
		// waiting for an ack time out (a probe timeout is 3 s in the WAN profile)
		// and exit, on the fake clock, before the bubble must be empty.
		t.Cleanup(func() { time.Sleep(time.Minute) })
		mem := &memNet{}
		f = placementSimOn(t, z, 10*time.Minute, nil, mem, &mem.bytes)
		t.Logf("%d datagrams dropped on a full queue", mem.lost.Load())
	})
	t.Logf("%s on the fake clock took %s of the wall clock and %s of CPU", z, time.Since(wall).Round(time.Second), (cpuTime() - cpu0).Round(time.Second))

	// A cold start: the first results take one interval to be probed, then spread
	// by changes and full report sets.
	if bound := z.interval + 30*time.Second; f.boot > bound {
		t.Errorf("a cold start agreed in %s of the fake clock, want within %s", f.boot, bound)
	}
	if f.replaced > placementBound {
		t.Errorf("after 10%% crashed, agreed on new checkers in %s of the fake clock, want within %s", f.replaced, placementBound)
	}
	if bound := placementBound + z.interval; f.recovery > bound {
		t.Errorf("after 10%% crashed, agreed on decisions from the new checkers in %s of the fake clock, want within %s", f.recovery, bound)
	}
	want := z.checks // every member probes every check
	if z.checkers > 0 {
		want = z.checkers * z.checks / z.members
	}
	if f.held < want*3/4 || f.held > want*5/4 {
		t.Errorf("%d own reports per member, want about %d (%d checks, checkers %d, on %d members)", f.held, want, z.checks, z.checkers, z.members)
	}
}

// coprimeStride is the least stride of at least s (1 at least) that has no factor in
// common with every, the seconds of the probe driver's round (check j is probed in
// rounds j mod every): a stride such as 20 against 30 would poll only checks probed
// in 3 of the 30 rounds, and agreement would be seen before most checks had a first
// result.
func coprimeStride(s, every int) int {
	s = max(s, 1)
	for gcd(s, every) != 1 {
		s++
	}
	return s
}

func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}
