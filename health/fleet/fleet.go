// Package fleet lets several healthroute instances share their probe results and
// judge each check by a quorum of the checkers they can reach (docs/routing.md#quorum): a
// check is healthy when more than Quorum percent of the reachable members' fresh
// reports say so. Membership comes from hashicorp/memberlist; reports travel as
// compact binary messages on its broadcast queue (first results, changes and
// heartbeats, relayed epidemically) and as full report sets (memberlist's push-pull,
// and pushed to a member at once when it joins, rejoins or comes back from a
// partition). A member's reports count while its heartbeats arrive (Config.Suspicion),
// whatever memberlist's slower failure detector thinks of it.
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
	DefaultSuspicion  = 5 * time.Second
	DefaultStale      = time.Minute
	DefaultMaxBackoff = 30 * time.Second
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

// senders is how many full report sets (pulls and their answers) go out at once.
const senders = 4

// maxDeltas bounds the change messages a member queues per beat; past it, peers
// notice the digest mismatch in the next beats and pull the full report set.
const maxDeltas = 16

// ErrNoKey is returned by New for a fleet with neither a key nor Insecure.
var ErrNoKey = errors.New("fleet: gossip needs a key (key_file) unless insecure is set")

// Config configures a Fleet. The zero Quorum is 0% (healthy when any reachable
// checker says so); the Corefile parser sets DefaultQuorum.
type Config struct {
	Name       string           // unique member name
	Bind       netip.AddrPort   // gossip address (UDP and TCP); port 0 picks one
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

	tune func(*memberlist.Config)                                          // tests: fast timers
	wrap func(memberlist.NodeAwareTransport) memberlist.NodeAwareTransport // tests: partitions, byte counts
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

	cfg   Config
	now   func() time.Time
	epoch uint64

	mu       sync.Mutex
	seq      uint64                     // last sequence given to an own report
	own      map[uint64]*ownReport      // this member's reports, by short id
	digest   uint64                     // of own, see mix
	deltas   int                        // change messages queued this beat
	peers    map[string]*peer           // other members' reports, by name
	alive    map[string]memberlist.Node // memberlist alive or suspect, self included; copies (memberlist mutates its own)
	lost     map[string]lostMember      // failed (not left) members to reconnect to
	last     map[string]*decision       // by fingerprint
	dirty    map[string]struct{}        // checks whose decision may have moved, for OnChecks
	dirtyAll bool                       // every decision may have moved
	pushed   map[string]time.Time       // when this member's full set last went to a member
	logs     *rateLog                   // memberlist's log lines, rate-limited

	ml      atomic.Pointer[memberlist.Memberlist]
	addr    string // this member's gossip address, set by Start
	queue   *memberlist.TransmitLimitedQueue
	kick    chan struct{}
	jobs    chan job
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	stopped bool
}

type ownReport struct {
	fp       string
	flags    byte
	seq      uint64
	observed time.Time     // last local probe
	gap      time.Duration // between the last two local probes
}

type peer struct {
	epoch    uint64
	seq      uint64 // highest sequence seen
	beat     uint64 // sentAt of the newest beat
	beatSeq  uint64 // its sequence
	heard    time.Time
	fresh    bool // as last evaluated, to notice changes
	lapsed   bool // fell silent past Suspicion; its return is a heal: full sets both ways
	digest   uint64
	mismatch int // beats in a row whose digest differs from ours
	pulled   time.Time
	reports  map[uint64]report
}

type report struct {
	flags    byte
	seq      uint64
	observed uint64 // unix ms, the member's clock
}

type lostMember struct {
	addr  string
	since time.Time
}

type decision struct {
	st      health.Status
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
		return nil, ErrNoKey
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
		cfg.Stale = DefaultStale
	}
	cfg.Stale = max(cfg.Stale, 3*cfg.Beat)
	if cfg.Suspicion <= 0 {
		cfg.Suspicion = DefaultSuspicion
	}
	cfg.Suspicion = max(cfg.Suspicion, 3*cfg.Beat)
	cfg.Limits = cfg.Limits.withDefaults()
	if cfg.MaxBackoff <= 0 {
		cfg.MaxBackoff = DefaultMaxBackoff
	}
	f := &Fleet{
		cfg: cfg, now: time.Now,
		own: map[uint64]*ownReport{}, peers: map[string]*peer{}, alive: map[string]memberlist.Node{},
		lost: map[string]lostMember{}, last: map[string]*decision{}, dirty: map[string]struct{}{},
		pushed: map[string]time.Time{}, logs: newRateLog(),
		kick: make(chan struct{}, 1), jobs: make(chan job, 64),
	}
	f.queue = &memberlist.TransmitLimitedQueue{NumNodes: f.numNodes, RetransmitMult: 3}
	return f, nil
}

// Name is this member's name.
func (f *Fleet) Name() string { return f.cfg.Name }

// Start binds the gossip address and starts the fleet's goroutines; joining runs in
// the background, so a member whose join targets are down serves alone meanwhile.
func (f *Fleet) Start() error {
	f.epoch = uint64(f.now().UnixMilli())
	mc := memberlist.DefaultWANConfig() // members may sit in different regions
	if f.cfg.Profile == LAN {
		mc = memberlist.DefaultLANConfig()
	}
	mc.Name = f.cfg.Name
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
	nt, err := newTransport(netip.AddrPortFrom(addr, f.cfg.Bind.Port()), f.cfg.Key, mc.Logger)
	if err != nil {
		return fmt.Errorf("fleet: bind %s: %w", f.cfg.Bind, err)
	}
	mc.BindAddr, mc.BindPort = addr.String(), nt.Port()
	mc.AdvertisePort = mc.BindPort
	if !addr.IsUnspecified() {
		mc.AdvertiseAddr = addr.String()
	}
	var tr memberlist.NodeAwareTransport = nt
	if f.cfg.wrap != nil {
		tr = f.cfg.wrap(nt)
	}
	tr = newGuard(tr, f.cfg.Limits, f.logs)
	mc.Transport = tr
	ml, err := memberlist.Create(mc)
	if err != nil {
		tr.Shutdown()
		return fmt.Errorf("fleet: %w", err)
	}
	f.addr = ml.LocalNode().Address()
	f.ml.Store(ml)
	ctx, cancel := context.WithCancel(context.Background())
	f.cancel = cancel
	f.wg.Add(2 + senders)
	go func() { defer f.wg.Done(); f.loop(ctx) }()
	go func() { defer f.wg.Done(); f.joinLoop(ctx) }()
	for range senders {
		go func() { defer f.wg.Done(); f.sender(ctx) }()
	}
	return nil
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
	if ml := f.ml.Load(); ml != nil {
		return ml.NumMembers()
	}
	return 1
}

// Local records this member's status of fp after one of its probes and tells the
// others when it changed.
func (f *Fleet) Local(fp string, st health.Status) {
	if !st.Seen {
		return
	}
	now := f.now()
	id := shortID(fp)
	f.mu.Lock()
	r := f.own[id]
	if r == nil {
		r = &ownReport{fp: fp}
		f.own[id] = r
	} else if !r.observed.IsZero() {
		r.gap = now.Sub(r.observed)
	}
	r.observed = now
	var b *bcast
	if flags := flagsOf(st.Down); r.seq == 0 || r.flags != flags {
		// A first result, a flip and a return from stale are announced at once, so
		// they reach every member in the next gossip round. Past maxDeltas a beat
		// (a cold start of thousands of checks), the digest in the beats makes the
		// others pull the full report set instead.
		b = f.setOwnLocked(id, r, flags, now, true)
	}
	f.mu.Unlock()
	f.broadcast(b)
}

func flagsOf(down bool) byte {
	if down {
		return flagDown
	}
	return 0
}

// setOwnLocked changes an own report and returns the change message to broadcast
// (nil unless announce, or past the per-beat budget).
func (f *Fleet) setOwnLocked(id uint64, r *ownReport, flags byte, now time.Time, announce bool) *bcast {
	if r.seq != 0 {
		f.digest -= mix(id, r.flags)
	}
	f.seq++
	r.seq, r.flags = f.seq, flags
	f.digest += mix(id, flags)
	if !announce || f.deltas >= maxDeltas {
		return nil
	}
	f.deltas++
	h := header{typ: msgDelta, name: f.cfg.Name, epoch: f.epoch, seq: f.seq, sentAt: ms(now)}
	return &bcast{key: deltaKey(f.cfg.Name, id), msg: appendEntry(appendHeader(nil, h), entry{id: id, flags: flags, seq: r.seq})}
}

func ms(t time.Time) uint64 { return uint64(max(t.UnixMilli(), 0)) }

// Status returns the quorum decision for fp (docs/routing.md#quorum): healthy when more than
// Quorum percent of the fresh reports of reachable members, this one's included, are
// healthy; with none, the last decision (or local, before any) is kept.
func (f *Fleet) Status(fp string, local health.Status) health.Status {
	now := f.now()
	f.mu.Lock()
	defer f.mu.Unlock()
	healthy, total := f.tallyLocked(shortID(fp), now, nil)
	d := f.last[fp]
	if d == nil {
		d = &decision{st: local}
		f.last[fp] = d
	}
	d.used = now
	if total == 0 {
		return d.st
	}
	down := !Healthy(healthy, total, f.cfg.Quorum)
	if down != d.st.Down || !d.st.Seen {
		since := now
		if down == local.Down {
			since = local.Since
		}
		if down != d.st.Down || d.st.Since.IsZero() {
			d.st.Since = since
		}
		d.st.Down, d.st.Seen = down, true
	}
	differs := local.Seen && down != local.Down
	if differs && !d.differs {
		overrides.Inc()
	}
	d.differs = differs
	return d.st
}

// Healthy is the quorum rule of docs/routing.md#quorum, strict: 100*healthy > quorum*total.
func Healthy(healthy, total, quorum int) bool { return 100*healthy > quorum*total }

// tallyLocked counts the fresh reports of id from reachable members; each is also
// passed to each when it is not nil, counted or not.
func (f *Fleet) tallyLocked(id uint64, now time.Time, each func(MemberReport)) (healthy, total int) {
	bound := f.cfg.Suspicion
	if r := f.own[id]; r != nil && r.gap > 0 {
		// A member that died keeps its place in memberlist for a while; its last
		// report of a check stops counting once it could have probed the check
		// three more times and beaten twice since it was last heard from.
		bound = min(bound, 3*r.gap+2*f.cfg.Beat)
	}
	if r := f.own[id]; r != nil {
		counted := r.flags&flagStale == 0
		if counted {
			total++
			if r.flags&flagDown == 0 {
				healthy++
			}
		}
		if each != nil {
			each(MemberReport{Member: f.cfg.Name, Self: true, Reachable: true, Counted: counted,
				Down: r.flags&flagDown != 0, Stale: !counted, Seq: r.seq, Observed: r.observed, Heard: r.observed})
		}
	}
	for name, p := range f.peers {
		r, ok := p.reports[id]
		if !ok {
			continue
		}
		_, reachable := f.alive[name]
		fresh := reachable && !p.heard.IsZero() && now.Sub(p.heard) <= bound
		counted := fresh && r.flags&flagStale == 0
		if counted {
			total++
			if r.flags&flagDown == 0 {
				healthy++
			}
		}
		if each != nil {
			each(MemberReport{Member: name, Reachable: reachable, Counted: counted, Down: r.flags&flagDown != 0,
				Stale: !counted, Seq: r.seq, Observed: time.UnixMilli(int64(r.observed)), Heard: p.heard})
		}
	}
	return healthy, total
}

// freshLocked reports whether p's reports may count: memberlist sees it, and it was
// heard from within Suspicion. (A report of a check with a short interval stops
// counting sooner, see tallyLocked.)
func (f *Fleet) freshLocked(name string, p *peer, now time.Time) bool {
	_, reachable := f.alive[name]
	return reachable && !p.heard.IsZero() && now.Sub(p.heard) <= f.cfg.Suspicion
}

// MemberReport is one member's latest report of a check, as this instance holds it.
type MemberReport struct {
	Member    string
	Self      bool      // this instance
	Reachable bool      // memberlist sees the member alive (or suspect)
	Counted   bool      // in the quorum: reachable, fresh and still probing the check
	Down      bool      // the member's probes find the endpoint unhealthy
	Stale     bool      // not counted: unreachable, silent too long, or stopped probing
	Seq       uint64    // the member's sequence number of this report
	Observed  time.Time // the member's last probe of the check known here (its clock)
	Heard     time.Time // when this instance last heard from the member (its clock)
}

// View is the quorum arithmetic of one check on this instance, for the status page.
type View struct {
	Healthy int            // counted reports that are healthy
	Total   int            // counted reports
	Quorum  int            // percent
	Down    bool           // the last decision published
	Kept    bool           // nothing counted: the last status is kept
	Reports []MemberReport // by member name
}

// View returns every member's report of fp and the quorum arithmetic.
func (f *Fleet) View(fp string) View {
	now := f.now()
	f.mu.Lock()
	defer f.mu.Unlock()
	v := View{Quorum: f.cfg.Quorum}
	v.Healthy, v.Total = f.tallyLocked(shortID(fp), now, func(r MemberReport) { v.Reports = append(v.Reports, r) })
	v.Kept = v.Total == 0
	if d := f.last[fp]; d != nil {
		v.Down = d.st.Down
	}
	slices.SortFunc(v.Reports, func(a, b MemberReport) int { return strings.Compare(a.Member, b.Member) })
	return v
}

// handle decodes and applies one message from another member.
func (f *Fleet) handle(b []byte, relay bool) {
	r := reader{b: b}
	h := r.header()
	if r.err != nil || h.name == f.cfg.Name {
		return
	}
	if h.typ == msgPull {
		f.send(h.name, f.stateMsg)
		return
	}
	now := f.now()
	var out *bcast
	changed, push := false, false
	f.mu.Lock()
	p := f.peers[h.name]
	if p == nil || h.epoch > p.epoch { // new, or restarted: its old reports are void
		if p != nil {
			changed = len(p.reports) > 0
			push = true // it restarted without memberlist noticing: it holds nothing of ours
		}
		p = &peer{epoch: h.epoch, reports: map[uint64]report{}}
		f.peers[h.name] = p
	}
	if h.epoch < p.epoch {
		f.mu.Unlock()
		return
	}
	switch h.typ {
	case msgDelta:
		e := r.entry()
		if r.err == nil && f.applyLocked(p, e, h.sentAt) {
			reportsReceived.Inc()
			if h.sentAt >= p.beat { // as recent as its last beat: it was running then
				p.heard = now
			}
			if own := f.own[e.id]; own != nil {
				f.dirty[own.fp] = struct{}{} // only this check's decision may move
				defer f.poke()
			}
			if relay {
				out = &bcast{key: deltaKey(h.name, e.id), msg: slices.Clone(b)}
			}
		}
	case msgBeat:
		digest := r.uint64()
		if r.err != nil || h.sentAt <= p.beat {
			break
		}
		settled := h.seq == p.beatSeq // nothing changed there since its last beat
		p.beat, p.beatSeq, p.heard = h.sentAt, h.seq, now
		p.seq = max(p.seq, h.seq)
		if relay {
			out = &bcast{key: h.name, msg: slices.Clone(b)}
		}
		// A beat can overtake the changes queued before it, and a member starting
		// many checks changes with every beat: pull its full report set when its
		// digest still differs from ours once it has settled (or after 8 beats).
		if digest == p.digest {
			p.mismatch = 0
		} else if p.mismatch++; (settled && p.mismatch >= 2 || p.mismatch >= 8) && now.Sub(p.pulled) >= 2*f.cfg.Beat {
			p.pulled, p.mismatch = now, 0
			defer f.send(h.name, f.pullMsg)
		}
	case msgState:
		es := r.entries()
		if r.err != nil {
			break
		}
		n := f.mergeLocked(p, h.seq, es, h.sentAt)
		reportsReceived.Add(float64(n))
		p.heard = now
		changed = changed || n > 0
	}
	if fresh := f.freshLocked(h.name, p, now); fresh != p.fresh {
		p.fresh, changed = fresh, true
		if fresh && p.lapsed { // back from a partition memberlist did not see through
			p.lapsed, push = false, true
		}
	}
	if changed {
		f.dirtyAll = true
	}
	if push {
		push = f.pushLocked(h.name, now)
	}
	f.mu.Unlock()
	f.broadcast(out)
	if push {
		f.send(h.name, f.stateMsg)
	}
	if changed {
		f.poke()
	}
}

// pushLocked reports whether this member's full report set should go to name now:
// on a join, a rejoin, a restart or a heal, at most once a beat per member. Both
// sides notice these events, so full sets cross both ways at once.
func (f *Fleet) pushLocked(name string, now time.Time) bool {
	if now.Sub(f.pushed[name]) < f.cfg.Beat {
		return false
	}
	f.pushed[name] = now
	return true
}

// applyLocked stores e when it is newer than what p holds and reports whether it was.
func (f *Fleet) applyLocked(p *peer, e entry, sentAt uint64) bool {
	observed := sentAt - min(e.age, sentAt)
	old, ok := p.reports[e.id]
	if ok && old.seq >= e.seq {
		if old.seq == e.seq && observed > old.observed {
			old.observed = observed
			p.reports[e.id] = old
		}
		return false
	}
	if ok {
		p.digest -= mix(e.id, old.flags)
	}
	p.reports[e.id] = report{flags: e.flags, seq: e.seq, observed: observed}
	p.digest += mix(e.id, e.flags)
	p.seq = max(p.seq, e.seq)
	return true
}

// mergeLocked applies a member's full report set taken at sequence seq: newer
// entries win, and reports it no longer has (as of seq) are dropped.
func (f *Fleet) mergeLocked(p *peer, seq uint64, es []entry, sentAt uint64) int {
	n := 0
	in := make(map[uint64]struct{}, len(es))
	for _, e := range es {
		in[e.id] = struct{}{}
		if f.applyLocked(p, e, sentAt) {
			n++
		}
	}
	for id, r := range p.reports {
		if _, ok := in[id]; !ok && r.seq <= seq {
			delete(p.reports, id)
			p.digest -= mix(id, r.flags)
			n++
		}
	}
	p.seq = max(p.seq, seq)
	return n
}

// stateMsg encodes this member's full report set.
func (f *Fleet) stateMsg() []byte {
	now := f.now()
	f.mu.Lock()
	defer f.mu.Unlock()
	h := header{typ: msgState, name: f.cfg.Name, epoch: f.epoch, seq: f.seq, sentAt: ms(now)}
	b := appendHeader(make([]byte, 0, 32+len(f.own)*14), h)
	b = appendUvarint(b, uint64(len(f.own)))
	for id, r := range f.own {
		b = appendEntry(b, entry{id: id, flags: r.flags, seq: r.seq, age: uint64(max(now.Sub(r.observed).Milliseconds(), 0))})
	}
	return b
}

func (f *Fleet) pullMsg() []byte {
	return appendHeader(nil, header{typ: msgPull, name: f.cfg.Name})
}

func (f *Fleet) beatMsg(now time.Time) *bcast {
	h := header{typ: msgBeat, name: f.cfg.Name, epoch: f.epoch, seq: f.seq, sentAt: ms(now)}
	b := appendHeader(nil, h)
	return &bcast{key: f.cfg.Name, msg: appendUint64(b, f.digest)}
}

// poke asks the loop to re-decide soon.
func (f *Fleet) poke() {
	select {
	case f.kick <- struct{}{}:
	default:
	}
}

func (f *Fleet) broadcast(b *bcast) {
	if b != nil && b.msg != nil {
		f.queue.QueueBroadcast(b)
	}
}

// send queues msg for member to over TCP; it is dropped when the queue is full.
func (f *Fleet) send(to string, msg func() []byte) {
	select {
	case f.jobs <- job{to: to, msg: msg}:
	default:
	}
}

func (f *Fleet) sender(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case j := <-f.jobs:
			f.mu.Lock()
			n, ok := f.alive[j.to]
			f.mu.Unlock()
			if !ok {
				continue
			}
			if err := f.ml.Load().SendReliable(&n, j.msg()); err != nil {
				log.Debugf("fleet: send to %s: %v", j.to, err)
			}
		}
	}
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
		f.mu.Lock()
		all, dirty := f.dirtyAll, map[string]struct{}(nil)
		if len(f.dirty) > 0 {
			dirty, f.dirty = f.dirty, map[string]struct{}{}
		}
		f.dirtyAll = false
		f.mu.Unlock()
		switch {
		case (all || f.OnChecks == nil && len(dirty) > 0) && f.OnChange != nil:
			f.OnChange()
		case len(dirty) > 0 && f.OnChecks != nil:
			f.OnChecks(slices.Collect(maps.Keys(dirty)))
		}
	}
}

// tick sends a beat, marks own reports of checks no longer probed stale and notices
// members falling silent, marking every decision dirty when any of that happened.
func (f *Fleet) tick() {
	changed := false
	now := f.now()
	forget := 10 * f.cfg.Stale
	var outs []*bcast
	f.mu.Lock()
	f.deltas = 0
	for id, r := range f.own {
		age := now.Sub(r.observed)
		switch {
		case r.flags&flagStale == 0 && age > max(f.cfg.Stale, 3*r.gap):
			outs = append(outs, f.setOwnLocked(id, r, r.flags|flagStale, now, true))
			changed = true
		case r.flags&flagStale != 0 && age > forget:
			delete(f.own, id)
			f.digest -= mix(id, r.flags)
			f.seq++ // full report sets from now on tell the others it is gone
		}
	}
	for name, p := range f.peers {
		fresh := f.freshLocked(name, p, now)
		if fresh != p.fresh {
			p.fresh, changed = fresh, true
			p.lapsed = !fresh
		}
		if fresh && now.Sub(p.heard) > 2*f.cfg.Beat {
			// Missed beats: its reports of checks with short intervals may
			// stop counting before the member as a whole does (tallyLocked).
			changed = true
		}
		if _, ok := f.alive[name]; !ok && now.Sub(p.heard) > forget {
			delete(f.peers, name)
			delete(f.pushed, name)
		}
	}
	for fp, d := range f.last {
		if now.Sub(d.used) > forget {
			delete(f.last, fp)
		}
	}
	for name, l := range f.lost {
		if now.Sub(l.since) > 24*time.Hour {
			delete(f.lost, name)
		}
	}
	outs = append(outs, f.beatMsg(now))
	membersAlive.Set(float64(len(f.alive)))
	f.dirtyAll = f.dirtyAll || changed
	f.mu.Unlock()
	f.logs.flush()
	for _, b := range outs {
		f.broadcast(b)
	}
}

// joinLoop joins the configured members and reconnects to failed ones, with
// exponential backoff up to MaxBackoff while some are missing, every MaxBackoff after.
func (f *Fleet) joinLoop(ctx context.Context) {
	const minBackoff = 100 * time.Millisecond
	backoff := minBackoff
	warned := false
	for {
		wait := f.cfg.MaxBackoff
		if targets := f.missing(); len(targets) > 0 {
			n, err := f.ml.Load().Join(targets)
			switch {
			case n == 0:
				if !warned {
					log.Warningf("fleet: cannot join %s yet, serving alone and retrying: %v", strings.Join(targets, " "), err)
					warned = true
				}
				wait = backoff
				backoff = min(2*backoff, f.cfg.MaxBackoff)
			case n < len(targets):
				wait = backoff
			default:
				backoff, warned = minBackoff, false
			}
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

// missing returns the join targets and failed members' addresses not alive now.
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
		if a != self && !up[a] && !slices.Contains(out, a) {
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

// bcast is a queued broadcast; a newer one with the same key replaces it.
type bcast struct {
	key string
	msg []byte
}

func (b *bcast) Invalidates(o memberlist.Broadcast) bool {
	ob, ok := o.(*bcast)
	return ok && ob.key == b.key
}
func (b *bcast) Name() string    { return b.key }
func (b *bcast) Message() []byte { return b.msg }
func (b *bcast) Finished()       {}

func deltaKey(member string, id uint64) string { return fmt.Sprintf("%s/%x", member, id) }

// delegate is the Fleet as memberlist's Delegate.
type delegate Fleet

func (d *delegate) NodeMeta(int) []byte { return nil }
func (d *delegate) NotifyMsg(b []byte)  { (*Fleet)(d).handle(b, true) }
func (d *delegate) GetBroadcasts(overhead, limit int) [][]byte {
	return d.queue.GetBroadcasts(overhead, limit)
}
func (d *delegate) LocalState(bool) []byte { return (*Fleet)(d).stateMsg() }
func (d *delegate) MergeRemoteState(b []byte, _ bool) {
	(*Fleet)(d).handle(b, false)
}

// events is the Fleet as memberlist's EventDelegate. memberlist calls it holding
// its own lock, so the Fleet never calls memberlist while holding f.mu.
type events Fleet

func (e *events) NotifyJoin(n *memberlist.Node)   { e.up(n) }
func (e *events) NotifyUpdate(n *memberlist.Node) { e.up(n) }

// up notes n alive; a member that was not (a join, or a rejoin after memberlist
// declared it dead) gets this member's full report set at once, and sends its own
// as it sees this member join in turn.
func (e *events) up(n *memberlist.Node) {
	f := (*Fleet)(e)
	f.mu.Lock()
	c := *n // memberlist holds its lock while it calls us, so this read is safe
	c.Addr, c.Meta = slices.Clone(n.Addr), nil
	_, was := f.alive[n.Name]
	f.alive[n.Name] = c
	delete(f.lost, n.Name)
	membersAlive.Set(float64(len(f.alive)))
	f.dirtyAll = true
	push := !was && n.Name != f.cfg.Name && f.pushLocked(n.Name, f.now())
	f.mu.Unlock()
	if push {
		f.send(n.Name, f.stateMsg)
	}
	f.poke()
}

func (e *events) NotifyLeave(n *memberlist.Node) {
	f := (*Fleet)(e)
	f.mu.Lock()
	delete(f.alive, n.Name)
	if n.State == memberlist.StateDead {
		f.lost[n.Name] = lostMember{addr: n.Address(), since: f.now()}
	}
	membersAlive.Set(float64(len(f.alive)))
	f.dirtyAll = true
	f.mu.Unlock()
	f.poke()
}
