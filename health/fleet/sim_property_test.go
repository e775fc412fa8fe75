package fleet

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/healthroute/healthroute/health"
)

// The property test of the fleet: random fleets on the fake clock (testing/synctest,
// the network in memory of memnet_test.go) at the timers users get, random events,
// one invariant (docs/fleet.md, The property test).

const (
	// propSeedsEnv runs seeds 1 to N instead of the CI budget (propSeedsCI).
	propSeedsEnv = "HEALTHROUTE_PROP_SEEDS"
	// propSeedEnv runs that one seed, with every event logged.
	propSeedEnv = "HEALTHROUTE_PROP_SEED"
	// propSeedsCI is how many seeds CI runs, and propSeedsCIRace under the race
	// detector (whose fleets are also smaller, see propScenario).
	propSeedsCI, propSeedsCIRace = 24, 16
	// propRegressions holds the seeds that once failed, run before the others.
	propRegressions = "testdata/property-seeds.txt"
)

// TestFleetPropertyFakeClock runs random fleets through random events and holds
// that every live member's routing verdict follows the quorum verdict from ground
// truth (docs/fleet.md, The property test). A seed reproduces its run exactly as
// far as the scenario goes (the fleet, the events and their times); the order of
// goroutines within one instant of the fake clock is the runtime's.
func TestFleetPropertyFakeClock(t *testing.T) {
	if testing.Short() {
		t.Skip("random fleets on the fake clock")
	}
	seeds := propRegressionSeeds(t)
	n := propSeedsCI
	if raceDetector {
		n = propSeedsCIRace
	}
	if v := os.Getenv(propSeedsEnv); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 1 {
			t.Fatalf("%s=%q: expected a number of seeds", propSeedsEnv, v)
		}
	}
	for s := range n {
		if !slices.Contains(seeds, uint64(s+1)) {
			seeds = append(seeds, uint64(s+1))
		}
	}
	verbose := false
	if v := os.Getenv(propSeedEnv); v != "" {
		s, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("%s=%q: expected a seed", propSeedEnv, v)
		}
		seeds, verbose = []uint64{s}, true
	}
	var events, members atomic.Int64
	for _, seed := range seeds {
		sc := newPropScenario(seed)
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				// Run last, after every member has stopped: memberlist's probes
				// still waiting for an ack time out on the fake clock.
				t.Cleanup(func() { time.Sleep(time.Minute) })
				runProperty(t, sc, verbose)
			})
			if t.Failed() {
				t.Logf("reproduce: %s=%d go test -run 'TestFleetPropertyFakeClock' ./health/fleet/ (then keep the seed in %s)", propSeedEnv, seed, propRegressions)
			}
		})
		events.Add(int64(len(sc.events)))
		members.Add(int64(sc.members))
	}
	t.Logf("%d seeds, %d members in all, %d events", len(seeds), members.Load(), events.Load())
}

// propRegressionSeeds reads the seeds kept as regression cases: one a line, text
// after # a comment.
func propRegressionSeeds(t *testing.T) []uint64 {
	f, err := os.Open(propRegressions)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []uint64
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line, _, _ := strings.Cut(sc.Text(), "#")
		if line = strings.TrimSpace(line); line == "" {
			continue
		}
		s, err := strconv.ParseUint(line, 10, 64)
		if err != nil {
			t.Fatalf("%s: %q is not a seed", propRegressions, line)
		}
		out = append(out, s)
	}
	return out
}

// propEvent is one event of a scenario: what, on which member (an index into the
// members able to take it, modulo their number), and for how long (a freeze, a
// partition), after gap.
type propEvent struct {
	kind     propKind
	gap, dur time.Duration
	pick     int
	withData bool          // a restart: with the member's saved state
	step     time.Duration // a clock step
	sides    []int         // a partition: each member's side, 0 or 1
}

type propKind uint8

const (
	propFlip propKind = iota // the endpoint goes down, or comes back
	propKill
	propRestart
	propFreeze
	propPartition
	propClockStep
)

var propKindNames = [...]string{"endpoint flips", "kill", "restart", "freeze", "partition", "clock step"}

// propScenario is a random fleet and its events, all drawn from the seed.
type propScenario struct {
	seed      uint64
	members   int
	checkers  int // 0: every member probes
	regions   []string
	roles     []Role
	interval  time.Duration
	threshold int
	events    []propEvent
}

func newPropScenario(seed uint64) propScenario {
	r := rand.New(rand.NewPCG(seed, 0x68656c7468))
	maxMembers := 30
	if raceDetector {
		// The race detector's runtime crashed under synctest on large fleets
		// (docs/fleet.md, Scale: golang/go#78156): smaller fleets under it.
		maxMembers = 12
	}
	sc := propScenario{seed: seed, members: 3 + r.IntN(maxMembers-2), interval: time.Duration(1+r.IntN(2)) * time.Second, threshold: 1 + r.IntN(3)}
	if r.IntN(2) == 0 {
		sc.checkers = 1 + r.IntN(min(5, sc.members-1))
	}
	regions := r.IntN(2) == 0
	sc.regions, sc.roles = make([]string, sc.members), make([]Role, sc.members)
	for i := range sc.members {
		if regions {
			sc.regions[i] = string(rune('a' + r.IntN(3)))
		}
		switch x := r.IntN(20); {
		case x < 3 && i >= 2: // the first two probe: a fleet with a checker
			sc.roles[i] = RoleAnswer
		case x < 5:
			sc.roles[i] = RoleProbe
		}
	}
	for range 6 + r.IntN(8) {
		e := propEvent{kind: propKind(r.IntN(len(propKindNames))), gap: time.Duration(2+r.IntN(24)) * time.Second, pick: r.IntN(1 << 20),
			dur: time.Duration(5+r.IntN(30)) * time.Second, withData: r.IntN(2) == 0}
		if r.IntN(3) == 0 {
			e.kind = propFlip // the endpoint flips most
		}
		e.step = []time.Duration{-time.Hour, -10 * time.Minute, 10 * time.Minute, time.Hour}[r.IntN(4)]
		e.sides = make([]int, sc.members)
		for i := range e.sides {
			e.sides[i] = r.IntN(2)
		}
		sc.events = append(sc.events, e)
	}
	return sc
}

func (sc propScenario) String() string {
	roles := map[Role]int{}
	for _, r := range sc.roles {
		roles[r]++
	}
	var kinds []string
	for _, e := range sc.events {
		kinds = append(kinds, propKindNames[e.kind])
	}
	return fmt.Sprintf("%d members (%d answer, %d probe), checkers %d, regions %v, interval %s, failure_threshold %d; events: %s",
		sc.members, roles[RoleAnswer], roles[RoleProbe], sc.checkers, len(slices.Compact(slices.Sorted(slices.Values(sc.regions)))) > 1,
		sc.interval, sc.threshold, strings.Join(kinds, ", "))
}

// bounds are the invariant's: once the endpoint has been in a state for follow,
// and nothing happened to the members for settle, every eligible member's routing
// verdict is the ground truth; once it has been down for settle, no eligible
// member answers it healthy; a member is eligible grace after it started, woke or
// a partition healed, while its side of any partition holds a member that probes.
func (sc propScenario) bounds() (follow, settle, grace time.Duration) {
	follow = time.Duration(sc.threshold+1)*sc.interval + 2*DefaultBeat
	settle = defaultSuspicion + follow + 2*DefaultBeat
	return follow, settle, 3 * DefaultBeat
}

// propJudge probes the check on one member as its Scheduler would: it asks the
// fleet whether it probes (health.Placer), feeds the result into health.State,
// tells the fleet (with a Verdict once the threshold window completed, the state
// flipped or was restored), restarts its window on OnStale, probes at once on
// OnMoved, and publishes the routing verdict (the fleet's Status) after its own
// probes and whenever the fleet says decisions may have moved (OnChange, OnChecks).
type propJudge struct {
	spec  *health.Spec
	fails int
	down  func() bool

	mu       sync.Mutex
	m        *Fleet
	state    health.State
	seen     bool
	window   int
	flip     bool
	restored bool
	paused   bool
	pub      health.Status // the routing verdict published

	moved chan struct{}
	quit  chan struct{}
	done  chan struct{}
	once  sync.Once
}

// local is the status the scheduler gives the fleet: a state restored from the
// member's data and not yet judged by its probes says so.
func (j *propJudge) local() health.Status {
	verdict := j.window >= j.fails || j.flip
	return health.Status{Seen: j.seen, Down: j.state.Down, Verdict: verdict, Restored: j.restored && !verdict}
}

func (j *propJudge) publishLocked() { j.pub = j.m.Status(j.spec.Fingerprint(), j.local()) }

func (j *propJudge) republish(fps []string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if fps == nil || slices.Contains(fps, j.spec.Fingerprint()) {
		j.publishLocked()
	}
}

func (j *propJudge) restart(fps []string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if slices.Contains(fps, j.spec.Fingerprint()) {
		j.state, j.window, j.flip, j.restored = health.State{Down: j.state.Down}, 0, false, false
	}
}

func (j *propJudge) probe() {
	if !j.m.Probes(j.spec) {
		return
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.paused {
		return // a frozen process probes nothing
	}
	observe(&j.state, &j.window, &j.flip, !j.down(), j.fails)
	j.seen = true
	j.m.Local(j.spec.Fingerprint(), j.local())
	j.publishLocked()
}

func (j *propJudge) run(phase time.Duration) {
	defer close(j.done)
	first := time.NewTimer(phase)
	select {
	case <-j.quit:
		first.Stop()
		return
	case <-first.C:
	}
	tick := time.NewTicker(j.spec.Interval)
	defer tick.Stop()
	for {
		j.probe()
		select {
		case <-j.quit:
			return
		case <-tick.C:
		case <-j.moved:
		}
	}
}

func (j *propJudge) stop() {
	j.once.Do(func() { close(j.quit) })
	<-j.done
}

// propMember is one member of the simulated fleet, across its restarts.
type propMember struct {
	name, addr string
	region     string
	role       Role
	clk        *freezer
	wallOff    atomic.Int64

	f      *Fleet
	j      *propJudge
	killed bool
	frozen bool
	since  time.Time     // started, woke or healed
	saved  *health.State // its last judged state, kept when killed (a data directory)
}

// propFleet is a running scenario.
type propFleet struct {
	t     *testing.T
	sc    propScenario
	net   *memNet
	spec  *health.Spec
	ms    []*propMember
	down  atomic.Bool
	rng   *rand.Rand
	truth time.Time // when the endpoint last changed
	topo  time.Time // when anything last happened to the members
	sides map[string]int

	mu         sync.Mutex
	violations int
	samples    int
}

func runProperty(t *testing.T, sc propScenario, verbose bool) {
	p := &propFleet{t: t, sc: sc, net: &memNet{}, rng: rand.New(rand.NewPCG(sc.seed, 1))}
	p.spec = &health.Spec{Name: "web", Type: health.HTTP, Target: "http://192.0.2.1/", Interval: sc.interval, Fails: sc.threshold, Checkers: sc.checkers}
	p.spec.Seal()
	t.Logf("seed %d: %s", sc.seed, sc)
	for i := range sc.members {
		m := &propMember{name: fmt.Sprintf("m%02d", i), region: sc.regions[i], role: sc.roles[i], clk: &freezer{}}
		p.ms = append(p.ms, m)
		if i > 0 {
			time.Sleep(time.Duration(p.rng.Int64N(int64(DefaultBeat)))) // each starts at its own offset in a beat
		}
		p.start(m, false)
	}
	waitForDetail(t, 30*time.Second+time.Duration(sc.members)*time.Second, "every member sees the whole fleet", func() bool {
		for _, m := range p.ms {
			if len(m.f.Members()) != sc.members {
				return false
			}
		}
		return true
	}, func() string {
		var b strings.Builder
		for _, m := range p.ms {
			fmt.Fprintf(&b, "; %s sees %v", m.name, m.f.Members())
		}
		return b.String()
	})
	p.truth, p.topo = time.Now(), time.Now()
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go p.sample(stop, sampled)

	type pending struct {
		at time.Time
		do func()
	}
	var later []pending
	// runDue runs what is pending until until (the zero time: all of it), then
	// lets the time up to until pass.
	runDue := func(until time.Time) {
		for {
			slices.SortFunc(later, func(a, b pending) int { return a.at.Compare(b.at) })
			if len(later) == 0 || !until.IsZero() && later[0].at.After(until) {
				break
			}
			next := later[0]
			later = later[1:]
			time.Sleep(time.Until(next.at))
			p.mu.Lock()
			next.do()
			p.mu.Unlock()
		}
		time.Sleep(time.Until(until))
	}
	logf := func(format string, args ...any) {
		if verbose {
			t.Logf("%s: "+format, append([]any{time.Now().Format("15:04:05.000")}, args...)...)
		}
	}
	for _, e := range sc.events {
		runDue(time.Now().Add(e.gap))
		p.mu.Lock() // the sampler reads what the events change
		p.event(e, logf, func(at time.Time, do func()) { later = append(later, pending{at, do}) })
		p.mu.Unlock()
	}
	// Whatever is pending ends, then the fleet settles and is checked once more.
	runDue(time.Time{})
	_, settle, _ := sc.bounds()
	time.Sleep(settle + sc.interval)
	close(stop)
	<-sampled
	for _, m := range p.ms {
		if !m.killed {
			m.j.stop()
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	logf("%d samples, %d wrong", p.samples, p.violations)
	if p.samples == 0 {
		t.Error("no sample taken")
	}
}

// event applies e; what ends later (a wake, a heal) goes to after. p.mu is held.
func (p *propFleet) event(e propEvent, logf func(string, ...any), after func(time.Time, func())) {
	switch e.kind {
	case propFlip:
		p.down.Store(!p.down.Load())
		p.truth = time.Now()
		logf("the endpoint goes %s", map[bool]string{true: "down", false: "up"}[p.down.Load()])
	case propKill:
		live := p.pickable(func(m *propMember) bool { return !m.killed && !m.frozen })
		if len(live) <= 2 {
			return
		}
		m := live[e.pick%len(live)]
		p.kill(m)
		logf("%s killed", m.name)
	case propRestart:
		dead := p.pickable(func(m *propMember) bool { return m.killed })
		if len(dead) == 0 {
			return
		}
		m := dead[e.pick%len(dead)]
		p.start(m, e.withData)
		logf("%s restarted (with its data: %v)", m.name, e.withData)
	case propFreeze:
		live := p.pickable(func(m *propMember) bool { return !m.killed && !m.frozen })
		if len(live) <= 2 {
			return
		}
		m := live[e.pick%len(live)]
		p.freeze(m, true)
		logf("%s frozen for %s", m.name, e.dur)
		after(time.Now().Add(e.dur), func() {
			if !m.killed {
				p.freeze(m, false)
				logf("%s woken", m.name)
			}
		})
	case propPartition:
		if p.sides != nil {
			return
		}
		p.split(e.sides)
		logf("partition %v for %s", p.sides, e.dur)
		after(time.Now().Add(e.dur), func() {
			p.split(nil)
			logf("partition healed")
		})
	case propClockStep:
		live := p.pickable(func(m *propMember) bool { return !m.killed })
		m := live[e.pick%len(live)]
		m.wallOff.Add(int64(e.step))
		logf("%s's wall clock stepped by %s", m.name, e.step)
	}
}

// pickable returns the members for which ok holds, in order.
func (p *propFleet) pickable(ok func(*propMember) bool) []*propMember {
	var out []*propMember
	for _, m := range p.ms {
		if ok(m) {
			out = append(out, m)
		}
	}
	return out
}

// start starts m (again, after a kill: a new incarnation at the same address,
// joining every other member), with its saved state when withData.
func (p *propFleet) start(m *propMember, withData bool) {
	tmpl := member{name: m.name, key: testKey, region: m.region, role: m.role, mem: p.net, clock: m.clk.now,
		wall: func() time.Time { return time.Now().Add(time.Duration(m.wallOff.Load())) }}
	if m.addr == "" {
		i := slices.Index(p.ms, m)
		tmpl.bind = netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 0, byte(i + 1)}), 0)
		for _, o := range p.ms[:i] { // every member started before, as a Corefile lists them
			tmpl.join = append(tmpl.join, o.addr)
		}
	} else {
		tmpl.bind = netip.MustParseAddrPort(m.addr)
		for _, o := range p.ms {
			if o != m {
				tmpl.join = append(tmpl.join, o.addr)
			}
		}
	}
	j := &propJudge{spec: p.spec, fails: p.sc.threshold, down: p.down.Load, moved: make(chan struct{}, 1), quit: make(chan struct{}), done: make(chan struct{})}
	if withData && m.saved != nil {
		j.state, j.seen, j.restored = *m.saved, true, true
	}
	tmpl.onChecks = j.republish
	tmpl.onChange = func() { j.republish(nil) }
	tmpl.onStale = j.restart
	tmpl.onMoved = func(*Fleet) {
		select {
		case j.moved <- struct{}{}:
		default:
		}
	}
	j.mu.Lock()
	j.m = start(p.t, nil, tmpl)
	if j.restored {
		j.publishLocked() // the scheduler publishes a restored state before the first query
	}
	j.mu.Unlock()
	m.addr, m.f, m.j, m.killed, m.since = j.m.Addr(), j.m, j, false, time.Now()
	p.topo = time.Now()
	go j.run(time.Duration(p.rng.Int64N(int64(p.sc.interval))))
	p.t.Cleanup(j.stop) // before its member stops (cleanups run last first)
}

func (p *propFleet) kill(m *propMember) {
	m.j.stop()
	m.j.mu.Lock()
	if m.j.window >= m.j.fails || m.j.flip || m.j.restored {
		st := m.j.state
		m.saved = &st
	}
	m.j.mu.Unlock()
	crash(m.f)
	m.killed = true
	p.topo = time.Now()
}

// freeze stops m as SIGSTOP does (its clock stands still, it probes nothing,
// nothing reaches it or leaves it) or resumes it.
func (p *propFleet) freeze(m *propMember, on bool) {
	m.j.mu.Lock()
	m.j.paused = on
	m.j.mu.Unlock()
	m.clk.freeze(on)
	m.frozen = on
	if !on {
		m.since = time.Now()
	}
	p.topo = time.Now()
	p.applySides()
}

// split cuts the fleet in two by sides (nil: heals).
func (p *propFleet) split(sides []int) {
	p.sides = nil
	if sides != nil {
		p.sides = map[string]int{}
		for i, m := range p.ms {
			p.sides[m.name] = sides[i]
		}
	} else {
		for _, m := range p.ms {
			m.since = time.Now()
		}
	}
	p.topo = time.Now()
	p.applySides()
}

// applySides puts each member on its side of the partition, and each frozen
// member on a side of its own.
func (p *propFleet) applySides() {
	side := map[string]int{}
	for i, m := range p.ms {
		switch {
		case m.frozen:
			side[m.addr] = 100 + i
		case p.sides != nil:
			side[m.addr] = p.sides[m.name]
		}
	}
	p.net.split(side)
}

// sideOf is m's side: the members it can reach now.
func (p *propFleet) sideOf(m *propMember) []*propMember {
	return p.pickable(func(o *propMember) bool {
		return !o.killed && !o.frozen && (p.sides == nil || p.sides[o.name] == p.sides[m.name])
	})
}

// sample checks the invariant on every eligible member every 100 ms.
func (p *propFleet) sample(stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	follow, settle, grace := p.sc.bounds()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		p.mu.Lock()
		now := time.Now()
		down := p.down.Load()
		for _, m := range p.ms {
			if m.killed || m.frozen || now.Sub(m.since) < grace {
				continue
			}
			if !slices.ContainsFunc(p.sideOf(m), func(o *propMember) bool { return o.role.Probes() }) {
				continue // nothing on its side probes: nothing to judge from
			}
			m.j.mu.Lock()
			pub := m.j.pub
			m.j.mu.Unlock()
			var why string
			switch {
			case now.Sub(p.truth) >= follow && now.Sub(p.topo) >= settle && pub.Down != down:
				why = fmt.Sprintf("the endpoint has been %s for %s and the members steady for %s",
					map[bool]string{true: "down", false: "up"}[down], now.Sub(p.truth).Round(time.Millisecond), now.Sub(p.topo).Round(time.Millisecond))
			case down && now.Sub(p.truth) >= settle && !pub.Down:
				why = fmt.Sprintf("the endpoint has been down for %s", now.Sub(p.truth).Round(time.Millisecond))
			}
			p.samples++
			if why != "" {
				if p.violations++; p.violations <= 3 {
					p.t.Errorf("seed %d, %s: %s answers %s: %s; its view: %+v", p.sc.seed, now.Format("15:04:05.000"), m.name,
						map[bool]string{true: "down", false: "healthy"}[pub.Down], why, m.f.View(p.spec.Fingerprint()))
				}
			}
		}
		p.mu.Unlock()
	}
}
