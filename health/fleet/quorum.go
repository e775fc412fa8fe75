package fleet

import (
	"slices"
	"strings"
	"time"

	"github.com/healthroute/healthroute/health"
)

// Local records this member's status of fp after one of its probes and tells the
// others when it changed. A status without a Verdict (the check's threshold window
// has not completed) is reported as no verdict yet, and counts nowhere.
func (f *Fleet) Local(fp string, st health.Status) {
	if !st.Seen {
		return
	}
	now := f.now()
	id := shortID(fp)
	f.mu.Lock()
	f.stallLocked(now)
	r := f.own[id]
	if r == nil {
		r = &ownReport{fp: fp}
		f.own[id] = r
		f.noteLocked(fp)
	} else if !r.observed.IsZero() && !r.nogap {
		g := now.Sub(r.observed)
		r.gap, r.lastGap = max(g, r.lastGap), g
	}
	r.observed, r.aged, r.nogap = now, false, false
	flags := flagsOf(st.Down)
	// A state restored from an earlier process is no verdict (Status.Restored):
	// the others count this member's report once its own probes judged it.
	if _, restarting := f.restart[id]; !st.Verdict || restarting {
		flags |= flagPending
	}
	var b *bcast
	if r.seq == 0 || r.flags != flags {
		// A first result, a verdict, a flip and a return from stale are announced
		// at once, so they reach every member in the next gossip round. Past
		// maxDeltas a beat (a cold start of thousands of checks), the digest in the
		// beats makes the others pull the full report set instead.
		b = f.setOwnLocked(id, r, flags, now, true)
	}
	f.mu.Unlock()
	f.broadcast(b)
	f.direct(b)
}

// Probed is told the result of each of this member's probes of fp, after Local:
// err is the failure (nil: the probe passed). The failure's reason, cut to
// MaxReason bytes, becomes this member's last failure reason of fp, which the others
// show in their per-checker view. A report that turned down is announced again with
// its reason (in place of the change, never as well: see direct), once per change;
// a reason that changes while the report stays down travels with the next full
// report set, as does the reason of a change that went without a message of its
// own (past maxDeltas a beat). A passing probe keeps the last failure reason, as Route 53 does.
func (f *Fleet) Probed(fp string, err error) {
	if err == nil {
		return
	}
	text := shortReason(err.Error())
	now := f.now()
	id := shortID(fp)
	f.mu.Lock()
	r := f.own[id]
	if r == nil {
		f.mu.Unlock()
		return // Local was not told of this probe (no result yet)
	}
	r.reason = text
	var b *bcast
	if r.flags&flagDown != 0 && r.sent == r.seq && r.told != r.seq {
		r.told = r.seq
		h := f.headerLocked(msgDelta, now)
		age := uint64(max(now.Sub(r.observed).Milliseconds(), 0))
		msg := appendEntry(appendHeader(nil, h), entry{id: id, flags: r.flags, seq: r.seq, age: age})
		b = &bcast{key: deltaKey(f.cfg.Name, id), msg: appendReasons(msg, []reason{{id: id, text: text}}), reason: true}
	}
	f.mu.Unlock()
	f.broadcast(b)
	f.direct(b)
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
	f.recent[id] = f.beats
	if !announce || f.deltas >= maxDeltas {
		return nil
	}
	f.deltas++
	r.sent = r.seq
	h := f.headerLocked(msgDelta, now)
	age := uint64(max(now.Sub(r.observed).Milliseconds(), 0))
	return &bcast{key: deltaKey(f.cfg.Name, id), msg: appendEntry(appendHeader(nil, h), entry{id: id, flags: flags, seq: r.seq, age: age})}
}

// noteLocked notes that this member decides, places or probes check fp: another
// member's report of it re-decides it (reportMovedLocked).
func (f *Fleet) noteLocked(fp string) { f.known[shortID(fp)] = fp }

// forgetKnownLocked forgets the checks this member no longer decides, places or
// probes (their decisions, placements and own reports forgotten).
func (f *Fleet) forgetKnownLocked() {
	for id, fp := range f.known {
		_, decided := f.last[fp]
		_, placed := f.placed[fp]
		if _, own := f.own[id]; !decided && !placed && !own {
			delete(f.known, id)
		}
	}
}

// headerLocked is the header of a message of type typ sent now.
func (f *Fleet) headerLocked(typ byte, now time.Time) header {
	return header{typ: typ, name: f.cfg.Name, epoch: f.epoch, seq: f.seq, sentAt: f.mono(now), wake: f.wake}
}

// Status returns the quorum decision for fp (docs/routing.md#quorum): healthy when
// more than Quorum percent of the counted reports of reachable members, this one's
// included, are healthy. With none counted, the last decision is kept; before any,
// the check is new, as in Route 53: healthy (unhealthy once inverted, which the
// caller applies) until a member's first full threshold window, or this member's
// state saved by its previous process (local.Restored), which no other member counts.
func (f *Fleet) Status(fp string, local health.Status) health.Status {
	now := f.now()
	f.mu.Lock()
	defer f.mu.Unlock()
	healthy, total := f.tallyLocked(fp, now, nil)
	d := f.last[fp]
	if d == nil {
		d = &decision{}
		f.last[fp] = d
		f.noteLocked(fp)
	}
	d.used = now
	if total == 0 {
		if !d.decided {
			d.st = health.Status{Seen: local.Seen}
			if local.Restored { // this member's saved state, until reports count
				d.st.Down, d.st.Since = local.Down, local.Since
			}
		}
		return d.st
	}
	down := !Healthy(healthy, total, f.cfg.Quorum)
	if down != d.st.Down || !d.decided {
		since := now
		if down == local.Down && !local.Since.IsZero() {
			since = local.Since
		}
		if down != d.st.Down || d.st.Since.IsZero() {
			d.st.Since = since
		}
		d.st.Down, d.st.Seen, d.decided = down, true, true
	}
	differs := local.Verdict && down != local.Down
	if differs && !d.differs {
		overrides.Inc()
	}
	d.differs = differs
	return d.st
}

// Healthy is the quorum rule of docs/routing.md#quorum, strict: 100*healthy > quorum*total.
func Healthy(healthy, total, quorum int) bool { return 100*healthy > quorum*total }

// tallyLocked counts the reports of fp that count: those of its checkers (see
// checkerLocked) that countsLocked accepts; each is also passed to each when it is
// not nil, counted or not.
func (f *Fleet) tallyLocked(fp string, now time.Time, each func(memberReport)) (healthy, total int) {
	id := shortID(fp)
	bound := f.cfg.Suspicion
	own := f.own[id]
	if own != nil && own.gap > 0 {
		// A member that died keeps its place in memberlist for a while; its last
		// report of a check stops counting once it could have probed the check
		// three more times and beaten twice since it was last vouched for.
		bound = min(bound, f.freshFor(own))
	}
	add := func(counted bool, flags byte) {
		if counted {
			total++
			if flags&flagDown == 0 {
				healthy++
			}
		}
	}
	if r := own; r != nil {
		checker := f.checkerLocked(fp, f.cfg.Name)
		counted := checker && r.flags&(flagStale|flagPending) == 0
		add(counted, r.flags)
		if each != nil {
			each(memberReport{Member: f.cfg.Name, Self: true, Reachable: true, Checker: checker, Counted: counted,
				Down: r.flags&flagDown != 0, Stale: !counted, Pending: r.flags&flagPending != 0,
				Seq: r.seq, Observed: r.observed, Heard: r.observed, Reason: r.reason})
		}
	}
	for name, p := range f.peers {
		r, ok := p.reports[id]
		if !ok {
			continue
		}
		_, reachable := f.alive[name]
		checker := f.checkerLocked(fp, name)
		counted := checker && reachable && f.countsLocked(p, r, now, bound)
		add(counted, r.flags)
		if each != nil {
			each(memberReport{Member: name, Reachable: reachable, Checker: checker, Counted: counted, Down: r.flags&flagDown != 0,
				Stale: !counted, Pending: r.flags&flagPending != 0, Seq: r.seq, Observed: r.probed, Heard: p.heard, Reason: r.reason})
		}
	}
	return healthy, total
}

// countsLocked reports whether r, a report of reachable member p, counts: it
// carries a verdict and the member still probes the check; it was confirmed since
// the member last resumed from a stall; the member was heard from within
// Suspicion; and its probe is fresh on this member's clock: its age when it
// arrived (receipt minus the age the member sent) or the member's newest beat,
// which vouches for every report it has not marked stale, is within bound.
func (f *Fleet) countsLocked(p *peer, r report, now time.Time, bound time.Duration) bool {
	if r.flags&(flagStale|flagPending) != 0 || r.wake != p.wake {
		return false
	}
	if p.heard.IsZero() || now.Sub(p.heard) > f.cfg.Suspicion {
		return false
	}
	return now.Sub(r.probed) <= bound || !p.vouched.IsZero() && now.Sub(p.vouched) <= bound
}

// freshLocked reports whether p's reports may count: memberlist sees it, and it was
// heard from within Suspicion. (A report of a check with a short interval stops
// counting sooner, see tallyLocked.)
func (f *Fleet) freshLocked(name string, p *peer, now time.Time) bool {
	_, reachable := f.alive[name]
	return reachable && !p.heard.IsZero() && now.Sub(p.heard) <= f.cfg.Suspicion
}

// memberReport is one member's latest report of a check, as this instance holds it.
type memberReport struct {
	Member    string
	Self      bool      // this instance
	Checker   bool      // one of the check's checkers now, as this instance places them
	Region    string    // the member's region
	Addr      string    // its gossip address, "" when memberlist does not see it
	Reachable bool      // memberlist sees the member alive (or suspect)
	Counted   bool      // in the quorum: a checker, reachable, with a verdict, fresh and still probing the check
	Down      bool      // the member's probes find the endpoint unhealthy
	Stale     bool      // not counted: not a checker, unreachable, silent too long, stale, no verdict yet or stopped probing
	Pending   bool      // no verdict yet: its threshold window has not completed since it started (or stalled)
	Seq       uint64    // the member's sequence number of this report
	Observed  time.Time // the member's last probe of the check known here, on this instance's clock
	Heard     time.Time // when this instance last heard from the member
	Reason    string    // the member's last failure reason of the check (at most MaxReason bytes), "" when none is known here
}

// View is the quorum arithmetic of one check on this instance, for the status page.
type View struct {
	Healthy int            // counted reports that are healthy
	Total   int            // counted reports
	Quorum  int            // percent
	Down    bool           // the last decision published
	Kept    bool           // nothing counted: the last status is kept
	New     bool           // nothing counted yet: healthy as a new check (unhealthy if inverted)
	Reports []memberReport // by member name
	// Checkers are the check's checkers as this instance places them now (sorted);
	// Placed says the check names its checkers (a number or regions): without,
	// every member that probes is one.
	Checkers []string
	Placed   bool
	Problem  string // why the check has no checker, when it names its checkers and has none
}

// View returns every member's report of fp and the quorum arithmetic.
func (f *Fleet) View(fp string) View {
	now := f.now()
	f.mu.Lock()
	defer f.mu.Unlock()
	v := View{Quorum: f.cfg.Quorum}
	v.Healthy, v.Total = f.tallyLocked(fp, now, func(r memberReport) { v.Reports = append(v.Reports, r) })
	v.Checkers, v.Placed = f.checkersLocked(fp)
	if p := f.placed[fp]; p != nil && len(v.Checkers) == 0 {
		v.Problem = "no checker: no member this one reaches may probe it"
		if len(p.want.regions) > 0 {
			v.Problem = "no checker: no member this one reaches is in regions " + strings.Join(p.want.regions, " ")
		}
	}
	for i := range v.Reports {
		v.Reports[i].Region, v.Reports[i].Addr = f.whereLocked(v.Reports[i].Member)
	}
	d := f.last[fp]
	v.Kept = v.Total == 0 && d != nil && d.decided
	v.New = v.Total == 0 && !v.Kept
	if d != nil {
		v.Down = d.st.Down
	}
	for _, c := range v.Checkers {
		if !slices.ContainsFunc(v.Reports, func(r memberReport) bool { return r.Member == c }) {
			region, addr := f.whereLocked(c)
			v.Reports = append(v.Reports, memberReport{Member: c, Self: c == f.cfg.Name, Checker: true, Reachable: true, Stale: true, Region: region, Addr: addr})
		}
	}
	slices.SortFunc(v.Reports, func(a, b memberReport) int { return strings.Compare(a.Member, b.Member) })
	return v
}
