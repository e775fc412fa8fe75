// Package fleet lets several healthroute instances share their probe results and
// judge each check by a quorum of the checkers they can reach (docs/routing.md#quorum): a
// check is healthy when more than Quorum percent of the reachable members' fresh
// reports say so. Membership comes from hashicorp/memberlist; reports travel as
// compact binary messages on its broadcast queue (first results, changes and
// heartbeats, relayed epidemically) and as full report sets (memberlist's push-pull,
// and pushed to a member at once when it joins, rejoins or comes back from a
// partition). A member's report counts while its heartbeats arrive (Config.Suspicion),
// whatever memberlist's slower failure detector thinks of it, once it carries a
// verdict from probes and while its probe is fresh (docs/fleet-freshness.md).
// Ages are measured on each member's own monotonic clock: no member's wall clock
// needs to agree with another's.
package fleet

import (
	"context"
	"errors"
	"fmt"
	stdlog "log"
	"maps"
	"math/rand/v2"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	clog "github.com/coredns/coredns/plugin/pkg/log"
	"github.com/hashicorp/memberlist"

	"github.com/healthroute/healthroute/health"
)

var log = clog.NewWithPlugin("healthroute")

// Defaults.
const (
	DefaultQuorum     = 18 // percent, Route 53's figure
	DefaultPort       = 7946
	DefaultBeat       = time.Second
	defaultSuspicion  = 5 * time.Second
	defaultStale      = time.Minute
	defaultMaxBackoff = 30 * time.Second
)

// Profile picks memberlist's base timers: how often members gossip and probe each
// other, and how long memberlist waits before it declares a silent member dead.
// Whether a member's reports count is decided by the fleet's own heartbeats
// (Config.Beat, Config.Suspicion) under either profile.
type Profile uint8

const (
	WAN Profile = iota // members in several regions: memberlist.DefaultWANConfig
	LAN                // members in one network: memberlist.DefaultLANConfig
)

// String returns the profile as the Corefile writes it: "wan" or "lan".
func (p Profile) String() string {
	if p == LAN {
		return "lan"
	}
	return "wan"
}

// wallOffset is added to this member's wall clock; only end-to-end tests set it
// (testclock.go).
var wallOffset time.Duration

// senders is how many full report sets (pulls and their answers) go out at once.
const senders = 4

// maxDeltas bounds the change messages a member queues per beat; past it, peers
// notice the digest mismatch in the next beats and pull the full report set.
const maxDeltas = 16

// errNoKey is returned by New for a fleet with neither a key nor Insecure.
var errNoKey = errors.New("fleet: gossip needs a key (key_file) unless insecure is set")

// Config configures a Fleet. The zero Quorum is 0% (healthy when any reachable
// checker says so); the Corefile parser sets DefaultQuorum.
type Config struct {
	Name       string           // unique member name
	Bind       netip.AddrPort   // gossip address (UDP and TCP); port 0 picks one
	Advertise  netip.AddrPort   // the address the other members reach this one at (NAT, a Service, a proxy); zero: Bind's
	Join       []netip.AddrPort // members to join; retried in the background
	Key        []byte           // AES key of 16, 24 or 32 bytes; nil only with Insecure
	Insecure   bool             // gossip in the clear
	Quorum     int              // percent 0-99: healthy iff 100*healthy > Quorum*reachable
	Profile    Profile          // memberlist's timers; the zero Profile is WAN
	Beat       time.Duration    // heartbeat interval; 0: DefaultBeat
	Suspicion  time.Duration    // a member not heard from for this long stops counting; 0: DefaultSuspicion (at least 3 beats)
	Stale      time.Duration    // own reports of a check not probed for this long, or 3 of its intervals if longer, drop out; 0: DefaultStale
	MaxBackoff time.Duration    // longest wait between join attempts; 0: DefaultMaxBackoff
	Limits     Limits           // inbound gossip connections; zero fields: defaults
	Region     string           // where this member runs: checks limited to regions are probed from members there
	Role       Role             // answers, probes or both (the zero Role)

	tune func(*memberlist.Config)                                          // tests: fast timers
	wrap func(memberlist.NodeAwareTransport) memberlist.NodeAwareTransport // tests: partitions, byte counts
	// listen, when set (the simulation on a fake clock), stands in for the gossip
	// sockets: it returns a transport bound at the address it is given and its port.
	listen func(netip.AddrPort) (memberlist.NodeAwareTransport, int, error)
}

// Fleet is one member: it implements health.Aggregator. Create it with New, set
// OnChange, Start it, and Stop it to leave the fleet.
type Fleet struct {
	// OnChange is called, from the fleet's goroutine, when reports from other members
	// or their reachability changed, so decisions may have: Scheduler.Republish.
	OnChange func()
	// OnChecks, when set, is called instead of OnChange when only some checks'
	// reports changed, with their fingerprints: Scheduler.RepublishChecks.
	OnChecks func(fps []string)
	// OnStale, when set, is called, from the fleet's goroutine, with this member's
	// checks whose last probe grew older than their freshness bound (the process
	// stalled, or their probes fell behind): Scheduler.RestartWindows, so that their
	// next verdict rests on probes none of which is that old.
	OnStale func(fps []string)
	// OnMoved, when set, is called, from the fleet's goroutine, when the members
	// that may probe changed, so that checks may have new checkers:
	// Scheduler.Replace.
	OnMoved func()

	cfg  Config
	now  func() time.Time // the clock; its monotonic reading times everything
	wall func() time.Time // the wall clock, for the clock offset others see
	// suspended is how long the host has been suspended (hostSuspended), which the
	// monotonic clock does not count; slept is its value when the fleet last ran.
	suspended func() time.Duration
	slept     time.Duration
	start     time.Time // of this incarnation: sentAt counts from it
	epoch     uint64

	mu       sync.Mutex
	seq      uint64                     // last sequence given to an own report
	own      map[uint64]*ownReport      // this member's reports, by short id
	digest   uint64                     // of own, see mix
	deltas   int                        // change messages queued this beat
	directed int                        // of them sent straight to every member (direct)
	peers    map[string]*peer           // other members' reports, by name
	alive    map[string]memberlist.Node // memberlist alive or suspect, self included; copies (memberlist mutates its own)
	lost     map[string]lostMember      // members memberlist dropped, to reconnect to for a day (events.NotifyLeave)
	last     map[string]*decision       // by fingerprint
	dirty    map[string]struct{}        // checks whose decision may have moved, for OnChecks
	known    map[uint64]string          // fingerprint by short id of every check this member decides or places (see noteLocked)
	dirtyAll bool                       // every decision may have moved
	pushed   map[string]time.Time       // when this member's full set last went to a member
	logs     *rateLog                   // memberlist's log lines, rate-limited
	wake     uint64                     // stalls resumed from; in every message's header
	ran      time.Time                  // when the fleet last ran (see stall)
	restart  map[uint64]struct{}        // own reports marked stale, until OnStale has restarted their windows
	beats    uint64                     // beats sent
	swept    time.Time                  // when decisions and placements not asked for were last looked for (tick)
	recent   map[uint64]uint64          // own reports changed lately: id -> beats when it changed (see beatMsg)

	meta      map[string]memberMeta // region and role of the members memberlist told of
	placed    map[string]*placement // checkers by fingerprint (placement.go)
	placeGen  uint64                // bumped when the members that may probe change
	cands     []candidate           // the members that may probe, as of candGen
	candNames []string              // their names, sorted
	candGen   uint64
	candMoves []candMove        // how the candidates changed, oldest first: placements advance by them
	assigned  int               // checks this member probes
	warnedAll bool              // a large fleet probing checks with every member was logged
	movedGen  uint64            // placeGen when OnMoved was last called
	short     map[string]bool   // checks with fewer checkers than they ask for, logged
	origin    map[string]string // where each placed check is defined, for warnings

	ml      atomic.Pointer[memberlist.Memberlist]
	nodes   atomic.Int32 // len(alive), for the broadcast queue (numNodes)
	addr    string       // this member's gossip address, as the others reach it (advertised), set by Start
	bound   string       // the address its gossip listeners are bound to, set by Start
	queue   *memberlist.TransmitLimitedQueue
	kick    chan struct{}
	jobs    chan job
	directs chan *bcast // own changes to send straight to every member (direct)
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	stopped bool
	leaving atomic.Bool // Stop has begun: the node metadata says so (nodeMeta)
}

type ownReport struct {
	fp       string
	flags    byte
	seq      uint64
	observed time.Time     // last local probe
	gap      time.Duration // the longer of the last two gaps between local probes
	lastGap  time.Duration // the last one
	reason   string        // the last failed probe's reason (shortReason), kept once probes pass
	sent     uint64        // seq whose change went in a message of its own (setOwnLocked)
	told     uint64        // seq whose change was announced again with the reason (Probed)
	aged     bool          // its window was restarted for probes grown too old (ageOwnLocked), since its last probe
	nogap    bool          // the time to its next probe spans a stall of this process: not a gap between probes
}

type peer struct {
	epoch    uint64
	retired  []uint64 // its earlier epochs: their messages are void
	wake     uint64   // its wake count: reports confirmed under an older one do not count
	seq      uint64   // highest sequence seen
	beat     uint64   // sentAt of the newest beat
	beatSeq  uint64   // its sequence
	heard    time.Time
	vouched  time.Time        // when its newest beat was heard (heardLocked): every report it holds was fresh then
	offsets  [8]time.Duration // its wall clock minus ours at its last beats
	nOffsets int
	sent     [8]time.Time // arrival minus sentAt of its last messages: its clock's zero on this member's (heardLocked)
	nSent    int
	warned   time.Time // when its clock offset was last logged
	fresh    bool      // as last evaluated, to notice changes
	lapsed   bool      // fell silent past Suspicion; its return is a heal: full sets both ways
	unsynced bool      // back from a lapse: its beats vouch for nothing until its full report set arrives or its digest matches
	digest   uint64
	mismatch int // beats in a row whose digest differs from ours
	pulled   time.Time
	reports  map[uint64]report
}

type report struct {
	flags  byte
	seq    uint64
	wake   uint64    // the member's wake count when this report was last confirmed
	probed time.Time // when the member probed it, on this member's clock: receipt minus its age
	reason string    // the member's last failure reason of the check, "" when none arrived
}

type lostMember struct {
	addr  string
	since time.Time
}

type decision struct {
	st      health.Status
	decided bool // st came from counted reports; before, the check is new
	differs bool
	used    time.Time
}

type job struct {
	to  string
	msg func() []byte
}

// New validates cfg and returns a Fleet that has not started.
func New(cfg Config) (*Fleet, error) {
	if cfg.Key == nil && !cfg.Insecure {
		return nil, errNoKey
	}
	if n := len(cfg.Key); cfg.Key != nil && n != 16 && n != 24 && n != 32 {
		return nil, fmt.Errorf("fleet: key of %d bytes, expected 16, 24 or 32", n)
	}
	if cfg.Name == "" || len(cfg.Name) > 255 {
		return nil, fmt.Errorf("fleet: name '%s', expected 1 to 255 bytes", cfg.Name)
	}
	if cfg.Quorum < 0 || cfg.Quorum > 99 {
		return nil, fmt.Errorf("fleet: quorum %d%%, expected 0%% to 99%%", cfg.Quorum)
	}
	if cfg.Beat <= 0 {
		cfg.Beat = DefaultBeat
	}
	if cfg.Stale <= 0 {
		cfg.Stale = defaultStale
	}
	cfg.Stale = max(cfg.Stale, 3*cfg.Beat)
	if cfg.Suspicion <= 0 {
		cfg.Suspicion = defaultSuspicion
	}
	cfg.Suspicion = max(cfg.Suspicion, 3*cfg.Beat)
	cfg.Limits = cfg.Limits.withDefaults()
	if cfg.MaxBackoff <= 0 {
		cfg.MaxBackoff = defaultMaxBackoff
	}
	f := &Fleet{
		cfg: cfg, now: time.Now, wall: func() time.Time { return time.Now().Add(wallOffset) }, suspended: hostSuspended, slept: hostSuspended(),
		restart: map[uint64]struct{}{}, recent: map[uint64]uint64{},
		own: map[uint64]*ownReport{}, peers: map[string]*peer{}, alive: map[string]memberlist.Node{},
		lost: map[string]lostMember{}, last: map[string]*decision{}, dirty: map[string]struct{}{}, known: map[uint64]string{},
		meta: map[string]memberMeta{}, placed: map[string]*placement{}, placeGen: 1,
		short: map[string]bool{}, origin: map[string]string{},
		pushed: map[string]time.Time{}, logs: newRateLog(),
		kick: make(chan struct{}, 1), jobs: make(chan job, 64), directs: make(chan *bcast, 64),
	}
	f.queue = &memberlist.TransmitLimitedQueue{NumNodes: f.numNodes, RetransmitMult: 3}
	return f, nil
}

// Name is this member's name.
func (f *Fleet) Name() string { return f.cfg.Name }

// Start binds the gossip address and starts the fleet's goroutines; joining runs in
// the background, so a member whose join targets are down serves alone meanwhile.
func (f *Fleet) Start() error {
	f.start, f.ran = f.now(), f.now()
	f.epoch = rand.Uint64() | 1         // not a time: a clock set back must not make a restart look older
	mc := memberlist.DefaultWANConfig() // members may sit in different regions
	if f.cfg.Profile == LAN {
		mc = memberlist.DefaultLANConfig()
	}
	mc.Name = f.cfg.Name
	// memberlist compresses every message with a fresh LZW writer, a 64 KiB table
	// allocated each time: a change sent straight to 199 members made about 12 MiB
	// of garbage. Off, a member's CPU for gossip halved in the fleet simulation and its
	// bytes grew by a third (docs/fleet.md, Scale). Members still read compressed
	// messages, so a fleet may mix versions.
	mc.EnableCompression = false
	mc.Delegate = (*delegate)(f)
	mc.Events = (*events)(f)
	mc.DeadNodeReclaimTime = time.Minute // a crashed member may come back on a new address
	mc.Logger = stdlog.New(f.logs, "", 0)
	if f.cfg.Key != nil {
		mc.SecretKey = slices.Clone(f.cfg.Key)
	}
	if f.cfg.tune != nil {
		f.cfg.tune(mc)
	}
	addr := f.cfg.Bind.Addr()
	if !addr.IsValid() {
		addr = netip.IPv4Unspecified()
	}
	tr, port, err := f.listen(netip.AddrPortFrom(addr, f.cfg.Bind.Port()), mc.Logger)
	if err != nil {
		return fmt.Errorf("fleet: bind %s: %w", f.cfg.Bind, err)
	}
	mc.BindAddr, mc.BindPort = addr.String(), port
	mc.AdvertisePort = mc.BindPort
	if !addr.IsUnspecified() {
		mc.AdvertiseAddr = addr.String()
	}
	if a := f.cfg.Advertise; a.IsValid() {
		mc.AdvertiseAddr, mc.AdvertisePort = a.Addr().Unmap().String(), int(a.Port())
	}
	if f.cfg.wrap != nil {
		tr = f.cfg.wrap(tr)
	}
	tr = newGuard(tr, f.cfg.Limits, f.logs)
	mc.Transport = tr
	ml, err := memberlist.Create(mc)
	if err != nil {
		tr.Shutdown()
		return fmt.Errorf("fleet: %w", err)
	}
	f.addr = ml.LocalNode().Address()
	f.bound = netip.AddrPortFrom(addr, uint16(port)).String()
	f.ml.Store(ml)
	ctx, cancel := context.WithCancel(context.Background())
	f.cancel = cancel
	f.wg.Add(3 + senders)
	go func() { defer f.wg.Done(); f.loop(ctx) }()
	go func() { defer f.wg.Done(); f.directSender(ctx) }()
	go func() { defer f.wg.Done(); f.joinLoop(ctx) }()
	for range senders {
		go func() { defer f.wg.Done(); f.sender(ctx) }()
	}
	return nil
}

// listen binds the gossip sockets at addr: the fleet's transport, or in the
// simulation the one its network gives.
func (f *Fleet) listen(addr netip.AddrPort, logs *stdlog.Logger) (memberlist.NodeAwareTransport, int, error) {
	if f.cfg.listen != nil {
		return f.cfg.listen(addr)
	}
	nt, err := newTransport(addr, f.cfg.Key, logs)
	if err != nil {
		return nil, 0, err
	}
	return nt, nt.Port(), nil
}

// Addr is the address other members reach this one at (after Start).
func (f *Fleet) Addr() string { return f.addr }

// Stop leaves the fleet, so the others drop this member at once, and waits for
// every goroutine the fleet started.
func (f *Fleet) Stop() {
	ml := f.ml.Load()
	if ml == nil || f.stopped {
		return
	}
	f.stopped = true
	// First tell the others this member is leaving, so that they do not join it
	// again once it is gone, as they do a member that failed; then leave.
	f.leaving.Store(true)
	if err := ml.UpdateNode(time.Second); err != nil {
		log.Debugf("fleet: announcing the leave: %v", err)
	}
	if err := ml.Leave(2 * time.Second); err != nil {
		log.Debugf("fleet: leave: %v", err)
	}
	f.cancel()
	f.wg.Wait()
	ml.Shutdown()
	membersAlive.Set(0)
}

// Members returns the names of the members this one can reach, itself included, sorted.
func (f *Fleet) Members() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]string, 0, len(f.alive))
	for n := range f.alive {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

func (f *Fleet) numNodes() int {
	// Not memberlist's NumMembers: the queue asks under its lock, and memberlist
	// may hold its node lock while it waits for f.mu (NotifyLeave), whose holder
	// may wait for the queue (stallLocked's Reset): a cycle.
	return max(int(f.nodes.Load()), 1)
}

// loop beats, ages reports and calls OnChange when decisions may have changed.
func (f *Fleet) loop(ctx context.Context) {
	t := time.NewTicker(f.cfg.Beat)
	defer t.Stop()
	settle := min(100*time.Millisecond, f.cfg.Beat/4)
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			f.tick()
		case <-f.kick:
			// let a burst of reports land before deciding again
			select {
			case <-ctx.Done():
				return
			case <-time.After(settle):
			}
			select {
			case <-f.kick:
			default:
			}
		}
		f.restartWindows()
		f.mu.Lock()
		all, dirty := f.dirtyAll, map[string]struct{}(nil)
		if len(f.dirty) > 0 {
			dirty, f.dirty = f.dirty, map[string]struct{}{}
		}
		f.dirtyAll = false
		moved := f.movedGen != f.placeGen
		f.movedGen = f.placeGen
		f.mu.Unlock()
		if moved && f.OnMoved != nil {
			f.OnMoved()
		}
		switch {
		case (all || f.OnChecks == nil && len(dirty) > 0) && f.OnChange != nil:
			f.OnChange()
		case len(dirty) > 0 && f.OnChecks != nil:
			f.OnChecks(slices.Collect(maps.Keys(dirty)))
		}
	}
}

// tick sends a beat after marking own reports whose probes grew too old (ageOwnLocked),
// notices members falling silent and forgets what is long gone, marking every
// decision dirty when any of that happened.
func (f *Fleet) tick() {
	now := f.now()
	f.mu.Lock()
	f.stallLocked(now)
	f.deltas, f.directed = 0, 0
	outs, changed := f.ageOwnLocked(now)
	changed = f.agePeersLocked(now) || changed
	if forget := 10 * f.cfg.Stale; now.Sub(f.swept) >= f.cfg.Stale {
		// What is forgotten after 10 stale bounds is looked for once a stale
		// bound, not every beat: each sweep visits every check.
		f.swept = now
		for fp, d := range f.last {
			if now.Sub(d.used) > forget {
				delete(f.last, fp)
			}
		}
		f.forgetPlacementsLocked(now, forget)
		f.forgetKnownLocked()
	}
	for name, l := range f.lost {
		if now.Sub(l.since) > 24*time.Hour {
			delete(f.lost, name)
		}
	}
	beat := f.beatMsg(now)
	straight, gossip := f.beatTargetsLocked(now)
	if gossip {
		outs = append(outs, beat)
	}
	membersAlive.Set(float64(len(f.alive)))
	f.dirtyAll = f.dirtyAll || changed
	f.mu.Unlock()
	f.logs.flush()
	for _, b := range outs {
		f.broadcast(b)
	}
	if len(straight) > 0 {
		ml := f.ml.Load()
		for i := range straight {
			if err := ml.SendBestEffort(&straight[i], beat.msg); err != nil {
				log.Debugf("fleet: beat to %s: %v", straight[i].Name, err)
			}
		}
	}
}

// maxBeatStraight bounds the members a beat goes straight to (beatTargetsLocked).
const maxBeatStraight = 16

// beatTargetsLocked returns the members this beat also goes straight to, one
// datagram each. A beat is gossiped: memberlist sends it to a few random members it
// lists, which relay it. While many of those are silent (a partition, or crashes
// memberlist has not declared yet: it keeps them for 30 s or more), the
// transmissions spent on them are lost: with 8 members split 3/5, 43% of the beats
// among the 3 never arrived, and a member went unheard by its own side past
// suspicion and dropped out of their counts and checkers. So while at least a
// quarter of the other members listed, heard from before, have not been heard from
// for half of suspicion, each member heard from within suspicion gets the beat
// straight too (at most maxBeatStraight, picked at random). A few silent members
// take a few transmissions, which the relays make up for; with every member heard
// (or a few late, as in an overloaded process, or some joining), nothing more is
// sent.
//
// In a fleet of more than beatGossipMax members every beat goes straight to every
// member instead, and is not gossiped (gossip is false).
func (f *Fleet) beatTargetsLocked(now time.Time) (straight []memberlist.Node, gossip bool) {
	if len(f.alive) > beatGossipMax {
		all := make([]memberlist.Node, 0, len(f.alive))
		for name, n := range f.alive {
			if name != f.cfg.Name {
				all = append(all, n)
			}
		}
		return all, false
	}
	var heard []memberlist.Node
	others, silent := 0, 0
	for name, n := range f.alive {
		if name == f.cfg.Name {
			continue
		}
		others++
		p := f.peers[name]
		if p != nil && !p.heard.IsZero() && now.Sub(p.heard) > f.cfg.Suspicion/2 {
			silent++ // heard before, not lately; one not heard yet is joining, and beats within a beat
		}
		if p != nil && now.Sub(p.heard) <= f.cfg.Suspicion {
			heard = append(heard, n)
		}
	}
	if silent == 0 || 4*silent < others {
		return nil, true
	}
	if len(heard) > maxBeatStraight {
		rand.Shuffle(len(heard), func(i, j int) { heard[i], heard[j] = heard[j], heard[i] })
		heard = heard[:maxBeatStraight]
	}
	return heard, true
}

// beatGossipMax is the largest fleet whose beats are gossiped. memberlist gossips
// every 500 ms (WAN profile) to 4 members, a datagram of about 1,400 bytes each:
// room for some 200 beats a second from each member, and every beat needs about
// 3·log10(N+1) sends from each of N members (its retransmissions), 190 a second at
// 40 members, 1,400 at 200. Past that the queue of beats overflows, changes wait
// behind it, and members drop out of each other's counts: on the fake clock a fleet
// of 200 members did not agree in 10 minutes. Sent straight, a beat is one datagram
// to each member (about 100 bytes with its encryption): 200 members agreed 29 s
// after a cold start, at 27 KB/s per member.
const beatGossipMax = 32

// agePeersLocked notices members falling silent and forgets those long gone; it
// reports whether decisions may have moved.
func (f *Fleet) agePeersLocked(now time.Time) bool {
	changed := false
	forget := 10 * f.cfg.Stale
	for name, p := range f.peers {
		fresh := f.freshLocked(name, p, now)
		if fresh != p.fresh {
			p.fresh, changed = fresh, true
			p.lapsed = !fresh
			p.unsynced = p.unsynced || !fresh
			f.membersMovedLocked()
		}
		if fresh && now.Sub(p.heard) > 2*f.cfg.Beat {
			// Missed beats: its reports of checks with short intervals may
			// stop counting before the member as a whole does (tallyLocked).
			changed = true
		}
		if _, ok := f.alive[name]; !ok && now.Sub(p.heard) > forget {
			delete(f.peers, name)
			delete(f.pushed, name)
			delete(f.meta, name)
			forgetMember(name)
		}
	}
	return changed
}

// joinLoop joins the configured members and reconnects to failed ones, with
// exponential backoff up to MaxBackoff while some are missing, every MaxBackoff after.
//
// A join that succeeds does not always bring the member back: after a partition long
// enough for memberlist to declare each side dead, both sides hold the other dead at
// the incarnation it last had, and memberlist ignores an alive message that is not
// newer. The join's state exchange tells each side it was declared dead, so each
// refutes with a higher incarnation, but those refutations reach the other side only
// through gossip that may no longer go there. So a member still missing after a
// successful join is joined again soon: an attempt that reaches more targets than the
// one before starts the backoff over, so the second exchange, which carries the
// refutations, follows within a fraction of a second, not a MaxBackoff later. A
// target that stays unreachable beside reachable ones still backs off to MaxBackoff.
func (f *Fleet) joinLoop(ctx context.Context) {
	const minBackoff = 100 * time.Millisecond
	backoff := minBackoff
	warned := false
	reached := 0 // targets the last attempt reached
	for {
		wait := f.cfg.MaxBackoff
		if targets := f.missing(); len(targets) > 0 {
			n, err := f.join(targets)
			if n == 0 && !warned {
				if f.nodes.Load() > 1 { // a member dropped or stopped, others still here
					log.Infof("fleet: cannot join %s again yet, retrying: %v", strings.Join(targets, " "), err)
				} else {
					log.Warningf("fleet: cannot join %s yet, serving alone and retrying: %v", strings.Join(targets, " "), err)
				}
				warned = true
			}
			if n > reached {
				backoff = minBackoff // progress: follow it up at once
			}
			reached = n
			wait = backoff
			backoff = min(2*backoff, f.cfg.MaxBackoff)
		} else {
			backoff, warned, reached = minBackoff, false, 0
		}
		wait += rand.N(wait/5 + 1) // members that failed together do not retry in step
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// joinAtOnce is how many join targets join tries at once.
const joinAtOnce = 8

// join joins targets, up to joinAtOnce at a time, each on its own: an address
// where nothing answers (a member's host gone) costs its own dial timeout (30 s at
// the WAN profile), not every later target's too. It returns how many it joined.
func (f *Fleet) join(targets []string) (int, error) {
	ml := f.ml.Load()
	var joined atomic.Int32
	errs := make([]error, len(targets))
	slots := make(chan struct{}, joinAtOnce)
	var wg sync.WaitGroup
	for i, a := range targets {
		slots <- struct{}{}
		wg.Go(func() {
			defer func() { <-slots }()
			n, err := ml.Join([]string{a})
			joined.Add(int32(n))
			errs[i] = err
		})
	}
	wg.Wait()
	return int(joined.Load()), errors.Join(errs...)
}

// missing returns the join targets and dropped members' addresses not alive now.
func (f *Fleet) missing() []string {
	self := f.Addr()
	f.mu.Lock()
	defer f.mu.Unlock()
	up := make(map[string]bool, len(f.alive))
	for _, n := range f.alive {
		up[n.Address()] = true
	}
	var out []string
	add := func(a string) {
		if a != self && a != f.bound && !up[a] && !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	for _, j := range f.cfg.Join {
		add(j.String())
	}
	for _, l := range f.lost {
		add(l.addr)
	}
	return out
}
