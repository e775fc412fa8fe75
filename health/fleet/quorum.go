package fleet

import (
	"slices"
	"strings"
	"time"

	"github.com/healthroute/healthroute/health"
)

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
