package test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/miekg/dns"
	"golang.org/x/sys/unix"

	"github.com/healthroute/healthroute/internal/coretest"
)

// The nemesis' faults: what each does to the fleet for one round.
var nemesisFaults = []string{"kill leader", "kill follower", "stop leader", "stop follower", "lose follower's log", "partition one", "restart everyone",
	"truncate follower's log", "fill one's disk"}

// TestControlsNemesis runs three members (their control ports through proxies
// that cut and heal) under changes (through the controls API and ARC's cluster
// API) and consistent reads of control east from three clients, while a nemesis picks a random fault per round: SIGKILL or SIGSTOP (3
// s, past the election timeout) of the leader or a follower, a follower's raft
// log deleted while it is down, or cut short at a random length (the member then
// starts on it or refuses to, naming the damage, and the test moves the log away
// as an operator would), one member cut off for 3 s, every member restarted, one
// member's disk full for 3 s (its writes past the size of its state.json fail,
// which the test sees in its output; it keeps running and answering DNS, and
// catches up after). After the rounds it checks that
// the history is linearizable (porcupine), that every acknowledged change is in
// the audit and no change refused before it was proposed is, that every member
// restarts, and that every member's DNS answers the committed state. Alongside,
// a Route 53 API client per member sends ChangeResourceRecordSets batches (two
// new names each): every member answers every name of every batch acknowledged.
//
// HEALTHROUTE_NEMESIS_ROUNDS sets the rounds (default 8, under a minute);
// HEALTHROUTE_NEMESIS_SEED replays a seed (the test logs the one it used);
// HEALTHROUTE_NEMESIS_FAULTS picks among some faults only (comma-separated);
// HEALTHROUTE_NEMESIS_R53_EVERY_MS sets each API client's pace (default 1000).
func TestControlsNemesis(t *testing.T) {
	if testing.Short() {
		t.Skip("three CoreDNS processes")
	}
	rounds := envInt(t, "HEALTHROUTE_NEMESIS_ROUNDS", 8)
	r53Every := time.Duration(envInt(t, "HEALTHROUTE_NEMESIS_R53_EVERY_MS", 1000)) * time.Millisecond
	seed := uint64(envInt(t, "HEALTHROUTE_NEMESIS_SEED", int(time.Now().UnixNano()%1e9)))
	t.Logf("nemesis seed %d, %d rounds (HEALTHROUTE_NEMESIS_SEED=%d replays it)", seed, rounds, seed)
	rng := rand.New(rand.NewPCG(seed, 37))
	faults := nemesisFaults
	if v := os.Getenv("HEALTHROUTE_NEMESIS_FAULTS"); v != "" { // a comma-separated subset, to run some faults only
		faults = strings.Split(v, ",")
		for _, x := range faults {
			if !slices.Contains(nemesisFaults, x) {
				t.Fatalf("HEALTHROUTE_NEMESIS_FAULTS: unknown fault %q (known: %s)", x, strings.Join(nemesisFaults, ", "))
			}
		}
	}

	f := newCtlFleet(t, 3, true)
	f.addRoute53API()
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
	arcAcked.Store(0)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	r53 := &r53History{}
	for c := range f.ms {
		wg.Go(func() { h.client(ctx, f, c, seed) })
		wg.Go(func() { r53.client(ctx, f, c, r53Every) })
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
		fault := faults[rng.IntN(len(faults))]
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
		case "truncate follower's log":
			t.Logf("round %d: %s", round, f.truncateLog(follower, rng))
		case "fill one's disk":
			i := []int{lead, follower}[rng.IntN(2)]
			t.Logf("round %d: %s", round, f.fillDisk(i))
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
	t.Logf("Route 53 API: %d record sets acknowledged (in batches of 2), %d batches not; ARC's API: %d changes acknowledged", len(r53.acked), r53.failed, arcAcked.Load())
	if writes < 30 || reads < 30 || len(r53.acked) < 20 || arcAcked.Load() < 5 {
		t.Fatalf("too few operations to mean anything: %d writes (%d through ARC acknowledged), %d reads, %d record sets", writes, arcAcked.Load(), reads, len(r53.acked))
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
		// A member restarted last may still be applying the log, slowly under the
		// Route 53 API's load (each entry rewrites and syncs state.json): wait while
		// what is missing shrinks, then report it.
		var audit map[string]bool
		missing := func() []string {
			audit = f.auditReasons(i)
			var out []string
			for r := range h.acked {
				if !audit[r] {
					out = append(out, r)
				}
			}
			if len(audit) >= 1000 {
				return nil
			}
			return out
		}
		took := waitShrinking(t, 10*time.Second, 2*time.Minute, f.ms[i].name+" holds every acknowledged change", func() int { return len(missing()) }, func() string {
			var others strings.Builder
			for j := range f.ms { // this member's, or every member's?
				a := f.auditReasons(j)
				n := 0
				for r := range h.acked {
					if !a[r] {
						n++
					}
				}
				fmt.Fprintf(&others, "%s: %d audit entries, %d of the %d acknowledged changes missing\n", f.ms[j].name, len(a), n, len(h.acked))
			}
			return fmt.Sprintf("seed %d: missing %v\n%s%s\n%s", seed, missing(), others.String(), f.diag(), f.ms[i].srv.Output())
		})
		t.Logf("%s, restarted, held every acknowledged change %s after the fleet was ready", f.ms[i].name, took.Round(time.Millisecond))
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
	for i := range f.ms { // every record set a Route 53 API batch acknowledged answers
		waitShrinking(t, 10*time.Second, 2*time.Minute, f.ms[i].name+" answers every acknowledged Route 53 API record set", func() int {
			return len(r53.missing(f, i))
		}, func() string {
			return fmt.Sprintf("seed %d: missing %v\n%s", seed, r53.missing(f, i), f.diag())
		})
	}
}

// waitShrinking waits until missing returns 0, failing once it has not fallen
// for stall (a member still applying the log keeps it falling), or after most.
// It returns how long it waited.
func waitShrinking(t *testing.T, stall, most time.Duration, what string, missing func() int, detail func() string) time.Duration {
	t.Helper()
	start, best, since := time.Now(), math.MaxInt, time.Now()
	for {
		n := missing()
		if n == 0 {
			return time.Since(start)
		}
		if n < best {
			best, since = n, time.Now()
		}
		if time.Since(since) > stall || time.Since(start) > most {
			t.Fatalf("%s: %d still missing, the last fewer %s ago (waited %s)\n%s", what, n,
				time.Since(since).Round(time.Millisecond), time.Since(start).Round(time.Millisecond), detail())
		}
		pause(200 * time.Millisecond)
	}
}

// truncateLog kills member i, cuts its raft log short at a random length and
// starts it again: it either starts on what is left, or refuses to start,
// naming the damaged log (docs/controls.md), and then starts once the log is
// moved away, as an operator would do, answering from its state.json until the
// leader sends it the log. It returns what happened.
func (f *ctlFleet) truncateLog(i int, rng *rand.Rand) string {
	f.t.Helper()
	m := f.ms[i]
	f.kill(i)
	path := filepath.Join(m.dataDir, "raft.db")
	fi, err := os.Stat(path)
	if err != nil {
		f.t.Fatal(err)
	}
	n := rng.Int64N(fi.Size())
	if err := os.Truncate(path, n); err != nil {
		f.t.Fatal(err)
	}
	if after, err := os.Stat(path); err != nil || after.Size() != n || n >= fi.Size() {
		f.t.Fatalf("%s: raft.db of %d bytes, cut at %d: now %v %v", m.name, fi.Size(), n, after, err)
	}
	out, refused := f.startOrRefusal(i)
	if !refused {
		f.start(i)
		return fmt.Sprintf("%s's raft.db cut from %d to %d bytes: it started on it", m.name, fi.Size(), n)
	}
	want := "controls: raft log: " + path + " is "
	if !strings.Contains(out, want) || !strings.Contains(out, "(move ") || strings.Contains(out, "fatal error") || strings.Contains(out, "goroutine ") {
		f.t.Fatalf("%s: raft.db cut from %d to %d bytes: refused without %q, or with a crash:\n%s", m.name, fi.Size(), n, want, out)
	}
	if err := os.Remove(path); err != nil {
		f.t.Fatal(err)
	}
	f.start(i)
	line := out[strings.Index(out, want):]
	line = line[:strings.IndexByte(line+"\n", '\n')]
	if j := strings.Index(line, " (move "); j >= 0 {
		line = line[:j]
	}
	return fmt.Sprintf("%s's raft.db cut from %d to %d bytes: refused (%s), started again without it", m.name, fi.Size(), n, strings.TrimPrefix(line, "controls: raft log: "+path+" "))
}

// startOrRefusal runs member i's Corefile until it answers DNS (then stops it:
// the caller starts it again) or exits, refusing to start (then it returns the
// process's output and true).
func (f *ctlFleet) startOrRefusal(i int) (string, bool) {
	f.t.Helper()
	dir := f.t.TempDir()
	conf := filepath.Join(dir, "Corefile")
	if err := os.WriteFile(conf, []byte(f.ms[i].corefile), 0o644); err != nil {
		f.t.Fatal(err)
	}
	cmd := exec.Command(coretest.Binary(f.t), "-conf", conf)
	cmd.Dir = dir
	var out bytes.Buffer // read only once Wait has returned
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		f.t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	q := new(dns.Msg)
	q.SetQuestion("www.example.org.", dns.TypeA)
	c := &dns.Client{Timeout: 200 * time.Millisecond}
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			return out.String(), true
		default:
		}
		if _, _, err := c.Exchange(q, fmt.Sprintf("127.0.0.1:%d", f.ms[i].dns)); err == nil {
			cmd.Process.Kill()
			<-exited
			return "", false
		}
		pause(20 * time.Millisecond)
	}
	cmd.Process.Kill()
	<-exited
	f.t.Fatalf("%s neither answered nor exited within 30s:\n%s", f.ms[i].name, out.String())
	return "", false
}

// diskFull is what the nemesis sees of a disk full: EFBIG's text in the member's
// output, from raft's log store or the state file's write.
const diskFull = "file too large"

// fillDisk makes member i's writes fail for 3 s at least (until one has failed,
// 10 s at most): RLIMIT_FSIZE on its process, at the size of its state.json (4
// KiB at least), so that a file written past that (the next state.json, longer
// by an audit entry, or the raft log past that offset) fails with EFBIG (Go
// ignores SIGXFSZ). Raft's term file (1 KiB, written in place) still takes new
// terms. Throughout, the member runs and answers DNS. Then it lifts the limit
// and waits until the member has applied what the others had committed. It
// fails the test when no write failed. It returns what happened.
func (f *ctlFleet) fillDisk(i int) string {
	f.t.Helper()
	m := f.ms[i]
	fi, err := os.Stat(filepath.Join(m.dataDir, "state.json"))
	if err != nil {
		f.t.Fatal(err)
	}
	size := max(fi.Size(), 4096)
	srv, pid := m.srv, m.srv.Cmd.Process.Pid
	before := strings.Count(srv.Output(), diskFull)
	if err := limitFiles(pid, uint64(size)); err != nil {
		f.t.Fatalf("%s: prlimit: %v", m.name, err)
	}
	start := time.Now()
	failures := func() int { return strings.Count(srv.Output(), diskFull) - before }
	answers := 0
	for time.Since(start) < 10*time.Second && (time.Since(start) < 3*time.Second || failures() == 0) && !processGone(pid) {
		if f.answer(i) != "" {
			answers++
		}
		pause(100 * time.Millisecond)
	}
	if err := limitFiles(pid, unix.RLIM_INFINITY); err != nil || processGone(pid) {
		// The process is reaped before its last output is copied: wait for it.
		for deadline := time.Now().Add(2 * time.Second); !strings.Contains(srv.Output(), "panic") && time.Now().Before(deadline); {
			pause(50 * time.Millisecond)
		}
		f.t.Fatalf("%s exited while its disk was full (%v):\n%s", m.name, err, srv.Output())
	}
	held := time.Since(start).Round(100 * time.Millisecond)
	if failures() == 0 {
		f.t.Fatalf("%s: RLIMIT_FSIZE %d bytes for %s, and no write failed (no %q in its output): the fault did nothing\n%s", m.name, size, held, diskFull, srv.Output())
	}
	if answers == 0 {
		f.t.Fatalf("%s answered no DNS query while its disk was full", m.name)
	}
	what := fmt.Sprintf("%s's files limited to %d bytes for %s: %d writes failed, it ran and answered DNS throughout", m.name, size, held, failures())
	// It catches up: it applies what a member that could write had committed.
	var commit uint64
	waitUntil(f.t, 15*time.Second, m.name+" catches up after its disk is no longer full", func() bool {
		for j := range f.ms {
			if commit > 0 {
				break
			}
			if v, err := f.view(j, ""); j != i && err == nil {
				commit = max(commit, v.Raft.Commit)
			}
		}
		v, err := f.view(i, "")
		return err == nil && commit > 0 && v.Raft.Applied >= commit
	}, func() string { return f.outputs() + f.raftLines() + f.goroutines(i) })
	return what + fmt.Sprintf(", caught up to index %d", commit)
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
// changes within the audit's 1,000 entries. A third of the changes go through
// ARC's cluster API (UpdateRoutingControlState), the others through the
// controls API; the reads are the controls API's consistent ones (ARC's read
// the member's own copy). The audit checks cover the controls API's changes,
// which carry a reason of their own.
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
		switch {
		case op.write && rng.IntN(3) == 0: // through ARC's API, a third of the writes
			code, body := f.arcSet(c, op.on)
			switch {
			case code == 0 && refusedConn(body), code == http.StatusTooManyRequests:
				ok = false // not sent, or throttled before anything
			case code == http.StatusOK:
				arcAcked.Add(1)
			default: // 503 (no majority) does not say whether it was proposed
				res.unknown = true
			}
		case op.write:
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
		default:
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

// arcAcked counts the changes ARC's API acknowledged.
var arcAcked atomic.Int64

// arcSet sets east through member c's ARC cluster API, signed as the aws CLI
// signs it, and returns the status and body (0 and the error's text when no
// answer came).
func (f *ctlFleet) arcSet(c int, on bool) (int, string) {
	body := fmt.Sprintf(`{"RoutingControlArn":%q,"RoutingControlState":%q}`, arcEastARN, map[bool]string{true: "On", false: "Off"}[on])
	req, err := http.NewRequest(http.MethodPost, "http://"+f.ms[c].r53+"/", strings.NewReader(body))
	if err != nil {
		f.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-amz-json-1.0")
	req.Header.Set("X-Amz-Target", "ToggleCustomerAPI.UpdateRoutingControlState")
	sum := sha256.Sum256([]byte(body))
	if err := v4.NewSigner().SignHTTP(context.Background(), aws.Credentials{AccessKeyID: r53KeyID, SecretAccessKey: r53Secret},
		req, hex.EncodeToString(sum[:]), "route53-recovery-cluster", "us-east-1", time.Now()); err != nil {
		f.t.Fatal(err)
	}
	return roundTrip(req)
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

// raftLines is every member's raft warnings and errors (its INFO lines, a few per
// Route 53 API batch, push them out of outputs' last lines).
func (f *ctlFleet) raftLines() string {
	var b strings.Builder
	for _, m := range f.ms {
		fmt.Fprintf(&b, "--- %s, raft's warnings and errors:\n", m.name)
		for line := range strings.Lines(m.srv.Output()) {
			if strings.Contains(line, "healthroute control:") && (strings.Contains(line, "[WARN]") || strings.Contains(line, "[ERROR]")) {
				b.WriteString(line)
			}
		}
	}
	return b.String()
}

// goroutines ends member i with SIGABRT, which makes Go print every goroutine's
// stack (CoreDNS handles SIGQUIT itself), and returns its output's end: for a
// member found stuck.
func (f *ctlFleet) goroutines(i int) string {
	srv := f.ms[i].srv
	syscall.Kill(srv.Cmd.Process.Pid, syscall.SIGABRT)
	waitUntil(f.t, 5*time.Second, f.ms[i].name+" exits on SIGABRT", func() bool { return processGone(srv.Cmd.Process.Pid) }, func() string { return "" })
	out := srv.Output()
	if j := strings.Index(out, "SIGABRT"); j >= 0 {
		out = out[j:]
	}
	return fmt.Sprintf("--- %s's goroutines (SIGABRT):\n%s\n", f.ms[i].name, out)
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
