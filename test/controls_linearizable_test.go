package test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

// ctlOp is one operation on control east: a write of on, or a consistent read.
type ctlOp struct {
	write, on bool
}

// ctlResult is an operation's outcome: what a read saw, or whether a write's
// outcome is unknown (a timeout or an error after it was sent).
type ctlResult struct {
	on, unknown bool
}

// ctlModel is control east as a register: a write sets it, a read returns it; a
// write whose outcome is unknown may or may not have taken effect.
var ctlModel = (&porcupine.NondeterministicModel{
	Init: func() []any { return []any{true} }, // a control never set is on
	Step: func(state, input, output any) []any {
		st, in, out := state.(bool), input.(ctlOp), output.(ctlResult)
		switch {
		case !in.write && out.on == st:
			return []any{st}
		case !in.write:
			return nil
		case out.unknown:
			return []any{st, in.on}
		}
		return []any{in.on}
	},
	Equal: func(a, b any) bool { return a == b },
	DescribeOperation: func(input, output any) string {
		in, out := input.(ctlOp), output.(ctlResult)
		if in.write {
			return fmt.Sprintf("set %t (unknown outcome: %t)", in.on, out.unknown)
		}
		return fmt.Sprintf("read %t", out.on)
	},
}).ToModel()

// TestControlsLinearizabilityModelRefusesStaleReads: the checker catches a read of
// a value overwritten before the read began, so a passing history means something.
func TestControlsLinearizabilityModelRefusesStaleReads(t *testing.T) {
	stale := []porcupine.Operation{
		{ClientId: 0, Input: ctlOp{write: true, on: false}, Call: 0, Output: ctlResult{}, Return: 10},
		{ClientId: 1, Input: ctlOp{}, Call: 20, Output: ctlResult{on: true}, Return: 30},
	}
	if porcupine.CheckOperations(ctlModel, stale) {
		t.Fatal("a read of on after a completed write of off passed as linearizable")
	}
	unknown := []porcupine.Operation{
		{ClientId: 0, Input: ctlOp{write: true, on: false}, Call: 0, Output: ctlResult{unknown: true}, Return: math.MaxInt64},
		{ClientId: 1, Input: ctlOp{}, Call: 20, Output: ctlResult{on: true}, Return: 30},
		{ClientId: 1, Input: ctlOp{}, Call: 40, Output: ctlResult{on: false}, Return: 50},
	}
	if !porcupine.CheckOperations(ctlModel, unknown) {
		t.Fatal("a write of unknown outcome seen late was refused")
	}
}

// TestControlsLinearizableWithMembersKilled records a history of changes and
// consistent reads (GET /v1/controls?consistent=1) of control east from three
// clients, one per member, for 12 s while members are SIGKILLed and restarted one
// at a time, and checks it with porcupine. A request refused before it reached
// a member (connection refused) is left out; a change that failed after it was
// sent has an unknown outcome, unless the member says it was never proposed.
func TestControlsLinearizableWithMembersKilled(t *testing.T) {
	if testing.Short() {
		t.Skip("three CoreDNS processes")
	}
	f := newCtlFleet(t, 3, false)
	for i := range f.ms {
		f.start(i)
	}
	f.ready(15*time.Second, 0, 1, 2)

	var mu sync.Mutex
	var history []porcupine.Operation
	t0 := time.Now()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for c := range f.ms {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(c), 7))
			for n := 0; n < 5000 && ctx.Err() == nil; n++ { // bounded: the context ends it first
				op := ctlOp{write: rng.IntN(2) == 0, on: rng.IntN(2) == 0}
				call := time.Since(t0).Nanoseconds()
				res, ok := f.linOp(c, op)
				ret := time.Since(t0).Nanoseconds()
				if !ok {
					continue
				}
				if res.unknown {
					ret = math.MaxInt64
				}
				mu.Lock()
				history = append(history, porcupine.Operation{ClientId: c, Input: op, Call: call, Output: res, Return: ret})
				mu.Unlock()
			}
		})
	}
	// Kill and restart one member at a time, each down for about 2 s: a pace, not a
	// wait for an event.
	for _, i := range []int{2, 1, 0} {
		pause(1500 * time.Millisecond)
		f.kill(i)
		pause(2 * time.Second)
		f.start(i)
	}
	pause(1500 * time.Millisecond)
	cancel()
	wg.Wait()

	writes, reads, unknown := 0, 0, 0
	for _, op := range history {
		if op.Input.(ctlOp).write {
			writes++
		} else {
			reads++
		}
		if op.Output.(ctlResult).unknown {
			unknown++
		}
	}
	t.Logf("history of %d operations over %s: %d writes (%d of unknown outcome), %d consistent reads", len(history), time.Since(t0).Round(time.Millisecond), writes, unknown, reads)
	if writes < 50 || reads < 50 {
		t.Fatalf("too few operations to mean anything: %d writes, %d reads", writes, reads)
	}
	res := porcupine.CheckOperationsTimeout(ctlModel, history, time.Minute)
	if res != porcupine.Ok {
		t.Fatalf("the history is not linearizable (porcupine: %s)", res)
	}
}

// pause waits d: a test's pacing between steps, not a wait for an event.
func pause(d time.Duration) {
	tm := time.NewTimer(d)
	<-tm.C
}

// linOp performs op through member c. ok is false when the request never reached
// the member (its process is down); unknown marks a write that may have applied.
func (f *ctlFleet) linOp(c int, op ctlOp) (ctlResult, bool) {
	if op.write {
		state := map[bool]string{true: "on", false: "off"}[op.on]
		code, body := f.post(c, "/v1/controls/east", state)
		switch {
		case code == 0 && refusedConn(body):
			return ctlResult{}, false
		case code == http.StatusOK:
			return ctlResult{}, true
		case code == http.StatusServiceUnavailable && strings.Contains(body, `"outcome": "not applied"`):
			return ctlResult{}, false // refused before anything was proposed: no effect, left out
		}
		return ctlResult{unknown: true}, true
	}
	v, err := f.view(c, "?consistent=1&audit=0")
	if err != nil {
		return ctlResult{}, false // a failed read has no effect: left out
	}
	return ctlResult{on: v.on("east")}, true
}

// refusedConn reports whether a transport error says the connection was refused:
// the request never reached the member.
func refusedConn(msg string) bool {
	return strings.Contains(msg, syscall.ECONNREFUSED.Error())
}
