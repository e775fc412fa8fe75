package health

import (
	"context"
	"io"
	"net"
	"testing"
	"time"
)

// The scheduler runs http, https and tcp probes under a probeCtx, whose Done does
// not close at the probe's budget: these tests hold that the budget still ends the
// probe, through the connection's deadlines, and that releasing the check still
// interrupts it.

// TestProbeBudgetEndsPhasesThatEachFit: a check with a 300 ms timeout against an
// endpoint that sends its status line after 200 ms and its body 200 ms later: each
// phase is within its own 300 ms, the whole probe is not, so it fails at 300 ms.
func TestProbeBudgetEndsPhasesThatEachFit(t *testing.T) {
	addr := rawServer(t, func(c net.Conn, done <-chan struct{}) {
		c.Read(make([]byte, 4096))
		for _, part := range []string{"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n", "OK"} {
			select {
			case <-done:
				return
			case <-time.After(200 * time.Millisecond):
			}
			io.WriteString(c, part)
		}
	})
	spec := &Spec{Name: "t", Type: HTTP, Target: "http://" + addr + "/", Timeout: 300 * time.Millisecond, Match: "OK"}
	c, err := NewChecker(spec, testAgent)
	if err != nil {
		t.Fatal(err)
	}
	if !boundsOwnWaits(c) {
		t.Fatalf("%T: want the checker a probeCtx serves", c)
	}
	s := &Scheduler{}
	start := time.Now()
	_, _, err = s.probe(t.Context(), c, spec)
	took := time.Since(start)
	wantResult(t, err, "timeout")
	if took < 250*time.Millisecond || took > time.Second {
		t.Errorf("probe took %s; want its 300 ms budget", took)
	}
}

// TestProbeReleaseInterruptsHangingProbe: cancelling the check's context (the check
// released, the scheduler stopped) ends a probe waiting for a status line at once,
// not at its 2 s limit.
func TestProbeReleaseInterruptsHangingProbe(t *testing.T) {
	addr := rawServer(t, func(c net.Conn, done <-chan struct{}) { c.Read(make([]byte, 4096)); <-done })
	for _, typ := range []Type{HTTP, HTTPS} {
		t.Run(typ.String(), func(t *testing.T) {
			scheme := "http://"
			if typ == HTTPS {
				scheme = "https://"
			}
			spec := &Spec{Name: "t", Type: typ, Target: scheme + addr + "/"}
			c, err := NewChecker(spec, testAgent)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(t.Context())
			time.AfterFunc(100*time.Millisecond, cancel)
			s := &Scheduler{}
			start := time.Now()
			_, _, err = s.probe(ctx, c, spec)
			if err == nil {
				t.Fatal("probe passed; want it interrupted")
			}
			if took := time.Since(start); took > time.Second {
				t.Errorf("probe took %s after its check was released at 100 ms; want it interrupted", took)
			}
		})
	}
}

// TestProbeCtx: the deadline is the budget's or the check's context's, whichever is
// earlier; Err reports the deadline once passed and the check's cancellation; the
// trace is its own.
func TestProbeCtx(t *testing.T) {
	parent, cancel := context.WithCancel(context.Background())
	now := time.Now()
	pc := &probeCtx{Context: parent, deadline: now.Add(time.Hour)}
	if dl, ok := pc.Deadline(); !ok || !dl.Equal(now.Add(time.Hour)) {
		t.Errorf("Deadline = %v, %v; want the budget's", dl, ok)
	}
	if traceFrom(pc) != &pc.tr {
		t.Error("traceFrom(probeCtx) is not its own trace")
	}
	early, cancelEarly := context.WithDeadline(parent, now.Add(time.Minute))
	defer cancelEarly()
	if dl, _ := (&probeCtx{Context: early, deadline: now.Add(time.Hour)}).Deadline(); !dl.Equal(now.Add(time.Minute)) {
		t.Errorf("Deadline = %v; want the check's context's, which is earlier", dl)
	}
	if err := pc.Err(); err != nil {
		t.Errorf("Err = %v before the deadline", err)
	}
	if err := (&probeCtx{Context: parent, deadline: now.Add(-time.Millisecond)}).Err(); err != context.DeadlineExceeded {
		t.Errorf("Err = %v past the deadline; want DeadlineExceeded", err)
	}
	cancel()
	if err := pc.Err(); err != context.Canceled {
		t.Errorf("Err = %v once the check's context is cancelled; want Canceled", err)
	}
}
