package test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/healthroute/healthroute/internal/coretest"
)

// The nemesis' faults: what each does to the fleet for one round.
var nemesisFaults = []string{"kill leader", "kill follower", "stop leader", "stop follower", "lose follower's log", "partition one", "restart everyone"}

// TestControlsNemesis runs three members (their control ports through proxies
// that cut and heal) under changes and consistent reads of control east from three
// clients, while a nemesis picks a random fault per round: SIGKILL or SIGSTOP (3
// s, past the election timeout) of the leader or a follower, a follower's raft
// log deleted while it is down, one member cut off for 3 s, every member
// restarted. After the rounds it checks that the history is linearizable
// (porcupine), that every acknowledged change is in the audit and no change
// refused before it was proposed is, that every member restarts, and that every
// member's DNS answers the committed state.
//
// HEALTHROUTE_NEMESIS_ROUNDS sets the rounds (default 8, under a minute);
// HEALTHROUTE_NEMESIS_SEED replays a seed (the test logs the one it used).
func TestControlsNemesis(t *testing.T) {
	if testing.Short() {
		t.Skip("three CoreDNS processes")
	}
	rounds := envInt(t, "HEALTHROUTE_NEMESIS_ROUNDS", 8)
	seed := uint64(envInt(t, "HEALTHROUTE_NEMESIS_SEED", int(time.Now().UnixNano()%1e9)))
	t.Logf("nemesis seed %d, %d rounds (HEALTHROUTE_NEMESIS_SEED=%d replays it)", seed, rounds, seed)
	rng := rand.New(rand.NewPCG(seed, 37))

	f := newCtlFleet(t, 3, true)
	for i := range f.ms {
		f.start(i)
	}
	f.ready(15*time.Second, 0, 1, 2)
	stopped := map[int]bool{}
	t.Cleanup(func() { // a failure mid-round leaves no process stopped
		for i := range stopped {
			if f.ms[i].srv != nil {
				syscall.Kill(f.ms[i].srv.Cmd.Process.Pid, syscall.SIGCONT)
			}
		}
	})

	h := &nemesisHistory{t0: time.Now()}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for c := range f.ms {
		wg.Go(func() { h.client(ctx, f, c, seed) })
	}
	signal := func(i int, sig syscall.Signal) {
		if err := syscall.Kill(f.ms[i].srv.Cmd.Process.Pid, sig); err != nil {
			t.Fatal(err)
		}
		stopped[i] = sig == syscall.SIGSTOP
	}
	var done []string
	for round := range rounds {
		pause(time.Second)
		lead, follower := f.roles(rng)
		fault := nemesisFaults[rng.IntN(len(nemesisFaults))]
		done = append(done, fault)
		t.Logf("round %d: %s (leader %s, follower %s)", round, fault, f.ms[lead].name, f.ms[follower].name)
		switch fault {
		case "kill leader", "kill follower":
			i := map[bool]int{true: lead, false: follower}[fault == "kill leader"]
			f.kill(i)
			pause(1500 * time.Millisecond)
			f.start(i)
		case "stop leader", "stop follower":
			i := map[bool]int{true: lead, false: follower}[fault == "stop leader"]
			signal(i, syscall.SIGSTOP)
			pause(3 * time.Second)
			signal(i, syscall.SIGCONT)
		case "lose follower's log":
			f.kill(follower)
			if err := os.Remove(filepath.Join(f.ms[follower].dataDir, "raft.db")); err != nil {
				t.Fatal(err)
			}
			f.start(follower)
		case "partition one":
			f.partition(follower, true)
			pause(3 * time.Second)
			f.partition(follower, false)
		case "restart everyone":
			for i := range f.ms {
				f.kill(i)
			}
			for i := range f.ms {
				f.start(i)
			}
		}
	}
	pause(time.Second)
	cancel()
	wg.Wait()
	waitUntil(t, 30*time.Second, "every member accepts changes after the rounds", func() bool {
		for i := range f.ms {
			if v, err := f.view(i, ""); err != nil || !v.Raft.CanChange {
				return false
			}
		}
		return true
	}, f.outputs)

	writes, unknown, reads := h.counts()
	t.Logf("seed %d: %d rounds (%s), %d operations over %s: %d changes acknowledged, %d of unknown outcome, %d refused before proposed, %d consistent reads",
		seed, rounds, strings.Join(done, ", "), len(h.ops), time.Since(h.t0).Round(time.Millisecond), len(h.acked), unknown, len(h.refused), reads)
	if writes < 30 || reads < 30 {
		t.Fatalf("too few operations to mean anything: %d writes, %d reads", writes, reads)
	}
	if res := porcupine.CheckOperationsTimeout(ctlModel, h.ops, time.Minute); res != porcupine.Ok {
		t.Fatalf("seed %d: the history is not linearizable (porcupine: %s)", seed, res)
	}

	// Every member restarts, then the audit and the answers are checked on each.
	for i := range f.ms {
		f.kill(i)
		f.start(i)
	}
	f.ready(30*time.Second, 0, 1, 2)
	v, err := f.view(0, "?consistent=1&audit=1000")
	if err != nil {
		t.Fatal(err)
	}
	for i := range f.ms {
		// A member restarted last may still be applying the log: wait (bounded) for
		// every acknowledged change, then report what is missing.
		var audit map[string]bool
		missing := func() []string {
			audit = f.auditReasons(i)
			var out []string
			for r := range h.acked {
				if !audit[r] {
					out = append(out, r)
				}
			}
			return out
		}
		coretest.WaitUntil(t, 10*time.Second, f.ms[i].name+" holds every acknowledged change", func() bool {
			return len(missing()) == 0 || len(audit) >= 1000
		}, func() string {
			return fmt.Sprintf("seed %d: missing %v\n%s\n%s", seed, missing(), f.diag(), f.ms[i].srv.Output())
		})
		if len(audit) >= 1000 { // the audit keeps the last 1,000 entries: a long run checks the rest
			t.Logf("%s: the audit is full (a long run): its acknowledged changes are checked by the history only", f.ms[i].name)
			continue
		}
		for r := range h.refused {
			if _, ok := audit[r]; ok {
				t.Errorf("seed %d: %s: the change %s, refused before it was proposed, is in the audit", seed, f.ms[i].name, r)
			}
		}
	}
	f.expect(v.on("east"), true, 0, 1, 2)
}

// roles returns the leader (a random member when none is known now) and another
// member.
func (f *ctlFleet) roles(rng *rand.Rand) (lead, follower int) {
	lead = rng.IntN(len(f.ms))
	for i := range f.ms {
		if v, err := f.view(i, ""); err == nil && v.Raft.State == "Leader" {
			lead = i
		}
	}
	return lead, (lead + 1 + rng.IntN(len(f.ms)-1)) % len(f.ms)
}

// auditReasons returns the reasons of member i's audit entries: true applied,
// false refused.
func (f *ctlFleet) auditReasons(i int) map[string]bool {
	f.t.Helper()
	resp, err := ctlClient.Get(fmt.Sprintf("http://127.0.0.1:%d/v1/controls?audit=1000", f.ms[i].api))
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	var v struct {
		Audit []struct{ Reason, Refused string }
	}
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
		f.t.Fatal(err)
	}
	out := map[string]bool{}
	for _, e := range v.Audit {
		out[e.Reason] = e.Refused == ""
	}
	return out
}

// nemesisHistory is what the clients did: porcupine's operations, and the reasons
// (unique per change) of the changes acknowledged and refused before proposed.
type nemesisHistory struct {
	t0 time.Time

	mu             sync.Mutex
	ops            []porcupine.Operation
	acked, refused map[string]bool
}

// client runs changes and consistent reads of east through member c until ctx
// ends (at most 2,000), one every 100 ms at most: a pace that keeps a CI run's
// changes within the audit's 1,000 entries.
func (h *nemesisHistory) client(ctx context.Context, f *ctlFleet, c int, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, uint64(c)))
	for n := 0; n < 2000 && ctx.Err() == nil; n++ {
		if n > 0 {
			pause(100 * time.Millisecond)
		}
		op := ctlOp{write: rng.IntN(2) == 0, on: rng.IntN(2) == 0}
		reason := fmt.Sprintf("nemesis-%d-%d", c, n)
		call := time.Since(h.t0).Nanoseconds()
		var res ctlResult
		ok := true
		if op.write {
			code, body := f.post(c, "/v1/controls/east?reason="+reason, map[bool]string{true: "on", false: "off"}[op.on])
			switch {
			case code == 0 && refusedConn(body):
				ok = false
			case code == http.StatusOK:
				h.note(&h.acked, reason)
			case code == http.StatusServiceUnavailable && strings.Contains(body, `"outcome": "not applied"`):
				h.note(&h.refused, reason)
				ok = false
			default:
				res.unknown = true
			}
		} else {
			res, ok = f.linOp(c, op)
		}
		ret := time.Since(h.t0).Nanoseconds()
		if !ok {
			continue
		}
		if res.unknown {
			ret = math.MaxInt64
		}
		h.mu.Lock()
		h.ops = append(h.ops, porcupine.Operation{ClientId: c, Input: op, Call: call, Output: res, Return: ret})
		h.mu.Unlock()
	}
}

func (h *nemesisHistory) note(set *map[string]bool, reason string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if *set == nil {
		*set = map[string]bool{}
	}
	(*set)[reason] = true
}

func (h *nemesisHistory) counts() (writes, unknown, reads int) {
	for _, op := range h.ops {
		if op.Input.(ctlOp).write {
			writes++
		} else {
			reads++
		}
		if op.Output.(ctlResult).unknown {
			unknown++
		}
	}
	return
}

// envInt reads a positive integer from the environment, def when unset.
func envInt(t *testing.T, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		t.Fatalf("%s=%q: expected a positive integer", name, v)
	}
	return n
}

// outputs describes every member's view and the end of its output, for failures.
func (f *ctlFleet) outputs() string {
	var b strings.Builder
	b.WriteString(f.diag())
	for _, m := range f.ms {
		out := m.srv.Output()
		lines := strings.Split(out, "\n")
		fmt.Fprintf(&b, "--- %s, last lines:\n%s\n", m.name, strings.Join(lines[max(0, len(lines)-40):], "\n"))
	}
	return b.String()
}
