package fleet

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/memberlist"
)

// handled is what handling a message leaves to do once f.mu is released.
type handled struct {
	out     *bcast // to relay
	changed bool   // decisions may have moved
	poke    bool   // some check's decision may have moved (f.dirty)
	push    bool   // send the member this member's full report set
	pull    bool   // ask the member for its full report set
}

// handle decodes and applies one message from another member.
func (f *Fleet) handle(b []byte, relay bool) {
	r := reader{b: b}
	h := r.header()
	if r.err != nil || h.name == f.cfg.Name || h.typ < msgState || h.typ > msgPull {
		return
	}
	if h.typ == msgPull {
		f.send(h.name, f.stateMsg)
		return
	}
	now := f.now()
	var m handled
	f.mu.Lock()
	if p := f.peerLocked(h, &m); p != nil {
		switch h.typ {
		case msgDelta:
			f.deltaLocked(p, h, &r, b, relay, now, &m)
		case msgBeat:
			f.beatLocked(p, h, &r, b, relay, now, &m)
		case msgState:
			f.stateLocked(p, h, &r, now, &m)
		}
		f.settleLocked(h.name, p, now, &m)
	}
	f.mu.Unlock()
	f.broadcast(m.out)
	if m.push {
		f.send(h.name, f.stateMsg)
	}
	if m.pull {
		f.send(h.name, f.pullMsg)
	}
	if m.changed || m.poke {
		f.poke()
	}
}

// peerLocked returns the member that sent h, or nil when the message is void: from
// an incarnation that has since restarted, or sent before the member stalled and
// delivered since. A new epoch voids the member's old reports; a new wake count
// stops the reports it holds from counting until the member confirms them, and
// asks it for its full report set.
func (f *Fleet) peerLocked(h header, m *handled) *peer {
	p := f.peers[h.name]
	switch {
	case p == nil:
		p = &peer{epoch: h.epoch, reports: map[uint64]report{}}
		f.peers[h.name] = p
	case h.epoch == p.epoch:
	case slices.Contains(p.retired, h.epoch):
		return nil
	default: // restarted: its old reports are void
		m.changed = len(p.reports) > 0
		m.push = true // it restarted without memberlist noticing: it holds nothing of ours
		retired := append(p.retired, p.epoch)
		if len(retired) > 8 {
			retired = retired[1:]
		}
		p = &peer{epoch: h.epoch, retired: retired, reports: map[uint64]report{}}
		f.peers[h.name] = p
	}
	if h.wake < p.wake {
		if h.typ != msgBeat {
			staleReports.WithLabelValues(memberLabel(h.name)).Inc()
		}
		return nil
	}
	if h.wake > p.wake {
		n := 0
		for _, r := range p.reports {
			if r.flags&(flagStale|flagPending) == 0 {
				n++
			}
		}
		staleReports.WithLabelValues(memberLabel(h.name)).Add(float64(n))
		p.wake, p.vouched = h.wake, time.Time{}
		m.changed, m.pull = true, true
	}
	return p
}

// deltaLocked applies one changed report.
func (f *Fleet) deltaLocked(p *peer, h header, r *reader, b []byte, relay bool, now time.Time, m *handled) {
	e := r.entry()
	if r.err != nil {
		return
	}
	stored, confirmed := f.applyLocked(p, e, h.wake, now)
	told := f.reasonsLocked(p, r.extensions(), []entry{e})
	if !stored && !confirmed {
		if relay && told {
			m.out = &bcast{key: deltaKey(h.name, e.id), msg: slices.Clone(b)}
		}
		return
	}
	reportsReceived.Inc()
	if h.sentAt >= p.beat { // as recent as its last beat: it was running then
		f.heardLocked(p, h.sentAt, now)
	}
	f.reportMovedLocked(e.id, m) // only this check's decision may move
	if relay && stored {
		m.out = &bcast{key: deltaKey(h.name, e.id), msg: slices.Clone(b)}
	}
}

// reportMovedLocked notes that another member's report of check id changed (or
// counts again): the decision of that check may move. It does so on every member
// that decides the check, whether it probes it or not: a member that is not one
// of its checkers, or whose role is answer, holds no own report of it, and
// decides from the others' reports alone.
func (f *Fleet) reportMovedLocked(id uint64, m *handled) {
	if fp, ok := f.known[id]; ok {
		f.dirty[fp] = struct{}{}
		m.poke = true
	}
}

// countMissedLocked counts the beats of member name sent between its beat sent at
// last (ms; 0: none yet from this epoch) and the one sent at now that never
// arrived: a member beats every Beat, so a gap of n beats, rounded, lost n-1.
func (f *Fleet) countMissedLocked(name string, last, now uint64) {
	beat := uint64(f.cfg.Beat.Milliseconds())
	if last == 0 || beat == 0 {
		heartbeatsMissed.WithLabelValues(memberLabel(name)) // the series exists at 0 from the member's first beat
		return
	}
	if n := (now - last + beat/2) / beat; n > 1 {
		heartbeatsMissed.WithLabelValues(memberLabel(name)).Add(float64(n - 1))
	}
}

// beatLocked applies a heartbeat: the member is running, vouches for the reports it
// has not marked stale, and says what its reports' digest and its wall clock are.
func (f *Fleet) beatLocked(p *peer, h header, r *reader, b []byte, relay bool, now time.Time, m *handled) {
	digest, wall, es := r.uint64(), r.uint64(), r.entries()
	if r.err != nil {
		return
	}
	for _, e := range es { // changes carried (see beatMsg), older beats' too
		stored, confirmed := f.applyLocked(p, e, h.wake, now)
		if stored {
			reportsReceived.Inc()
		}
		if stored || confirmed {
			f.reportMovedLocked(e.id, m)
		}
	}
	if h.sentAt <= p.beat {
		return
	}
	f.countMissedLocked(h.name, p.beat, h.sentAt)
	settled := h.seq == p.beatSeq // nothing changed there since its last beat
	p.beat, p.beatSeq = h.sentAt, h.seq
	sent := f.heardLocked(p, h.sentAt, now)
	// Back from a lapse (a partition, a freeze on either side), the reports held
	// from it may be older than those it vouches for: its beats vouch again once
	// its full report set arrived or its digest matches what is held.
	if p.unsynced && digest == p.digest {
		p.unsynced = false
	}
	if !p.unsynced && sent.After(p.vouched) {
		p.vouched = sent
	}
	p.seq = max(p.seq, h.seq)
	f.noteOffsetLocked(h.name, p, wall, now)
	if relay {
		m.out = &bcast{key: h.name, msg: slices.Clone(b)}
	}
	// A beat can overtake the changes queued before it, and a member starting
	// many checks changes with every beat: pull its full report set when its
	// digest still differs from ours once it has settled (or after 8 beats).
	if digest == p.digest {
		p.mismatch = 0
	} else if p.mismatch++; (settled && p.mismatch >= 2 || p.mismatch >= 8) && now.Sub(p.pulled) >= 2*f.cfg.Beat {
		p.pulled, p.mismatch = now, 0
		m.pull = true
	}
}

// stateLocked applies a member's full report set.
func (f *Fleet) stateLocked(p *peer, h header, r *reader, now time.Time, m *handled) {
	es := r.entries()
	if r.err != nil {
		return
	}
	n, confirmed := f.mergeLocked(p, h.seq, es, h.wake, now)
	f.reasonsLocked(p, r.extensions(), es)
	reportsReceived.Add(float64(n))
	f.heardLocked(p, h.sentAt, now)
	p.unsynced = false
	m.changed = m.changed || n > 0 || confirmed
}

// heardLocked notes that a message p sent at sentAt (on its clock: ms since its
// incarnation started, see mono) arrived now, and returns when p was heard from by
// it: when it arrived, or a beat after it was sent if it arrived later than that
// (on this member's clock); p.heard moves on to that time.
//
// A message can arrive long after it was sent: each relay queues a beat for 6
// transmissions, those sent least often first, so while the queue is full its
// later transmissions wait behind every fresher message and reach a member that
// missed the beat seconds later, when its member may have died. Taken as heard
// when it arrived, such a beat made a member that had crashed 4.6 s before count
// again on one member for another Suspicion, which kept it among the candidates
// there while the others had placed its checks elsewhere
// (TestSimulationPlacementFakeClock: 9-11 s to agree on new checkers in 8 runs
// of 117, 6-7 s as a rule). A beat says its member runs until its next beat is
// due, a beat later; a message older than that when it arrives says no more.
// Transit only makes arrival minus sentAt later, so the earliest of the last 8 (a
// message that came straight, or by the quickest relays) places the member's
// clock on this one's, and sentAt read on it is when a message was sent, late by
// the quickest transit of those 8 at most. Monotonic clocks on both sides run at
// the same rate; a member whose host was suspended moves its clock on by as much
// (shiftLocked), and any other jump of its clock ages out of the 8.
func (f *Fleet) heardLocked(p *peer, sentAt uint64, now time.Time) time.Time {
	d := time.Duration(min(sentAt, 1<<40)) * time.Millisecond
	zero := now.Add(-d)
	p.sent[p.nSent%len(p.sent)] = zero
	p.nSent++
	for _, z := range p.sent[:min(p.nSent, len(p.sent))] {
		if z.Before(zero) {
			zero = z
		}
	}
	at := now
	if due := zero.Add(d + f.cfg.Beat); due.Before(at) {
		at = due
	}
	if at.After(p.heard) {
		p.heard = at
	}
	return at
}

// settleLocked notices a member turning fresh or silent; one back from a lapse
// memberlist did not see (a partition) gets this member's full report set.
func (f *Fleet) settleLocked(name string, p *peer, now time.Time, m *handled) {
	if fresh := f.freshLocked(name, p, now); fresh != p.fresh {
		p.fresh, m.changed = fresh, true
		f.membersMovedLocked()
		if fresh && p.lapsed { // back from a partition memberlist did not see through
			p.lapsed, m.push, m.pull = false, true, p.unsynced
		}
	}
	if m.changed {
		f.dirtyAll = true
	}
	if m.push {
		m.push = f.pushLocked(name, now)
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

// applyLocked stores e, received now in a message of wake count wake, when it is
// newer than what p holds (stored); a report p already holds at the same sequence
// is confirmed: its probe time moves forward and it counts again after a wake.
func (f *Fleet) applyLocked(p *peer, e entry, wake uint64, now time.Time) (stored, confirmed bool) {
	probed := now.Add(-time.Duration(min(e.age, 1<<32)) * time.Millisecond)
	old, ok := p.reports[e.id]
	if ok && old.seq >= e.seq {
		if old.seq == e.seq {
			confirmed = old.wake != wake
			old.wake = wake
			if probed.After(old.probed) {
				old.probed = probed
			}
			p.reports[e.id] = old
		}
		return false, confirmed
	}
	if ok {
		p.digest -= mix(e.id, old.flags)
	}
	p.reports[e.id] = report{flags: e.flags, seq: e.seq, wake: wake, probed: probed, reason: old.reason}
	p.digest += mix(e.id, e.flags)
	p.seq = max(p.seq, e.seq)
	return true, false
}

// mergeLocked applies a member's full report set taken at sequence seq: newer
// entries win, and reports it no longer has (as of seq) are dropped. It returns
// how many changed and whether any was confirmed after a wake.
func (f *Fleet) mergeLocked(p *peer, seq uint64, es []entry, wake uint64, now time.Time) (n int, confirmed bool) {
	in := make(map[uint64]struct{}, len(es))
	for _, e := range es {
		in[e.id] = struct{}{}
		stored, c := f.applyLocked(p, e, wake, now)
		if stored {
			n++
		}
		confirmed = confirmed || c
	}
	for id, r := range p.reports {
		if _, ok := in[id]; !ok && r.seq <= seq {
			delete(p.reports, id)
			p.digest -= mix(id, r.flags)
			n++
		}
	}
	p.seq = max(p.seq, seq)
	return n, confirmed
}

// stateMsg encodes this member's full report set, each report with its probe's age.
func (f *Fleet) stateMsg() []byte {
	now := f.now()
	f.mu.Lock()
	defer f.mu.Unlock()
	f.stallLocked(now)
	b := appendHeader(make([]byte, 0, 40+len(f.own)*14), f.headerLocked(msgState, now))
	b = appendUvarint(b, uint64(len(f.own)))
	var rs []reason
	for id, r := range f.own {
		b = appendEntry(b, entry{id: id, flags: r.flags, seq: r.seq, age: uint64(max(now.Sub(r.observed).Milliseconds(), 0))})
		if r.reason != "" && r.flags&flagDown != 0 && len(rs) < maxStateReasons {
			rs = append(rs, reason{id: id, text: r.reason})
		}
	}
	return appendReasons(b, rs)
}

// maxStateReasons bounds the failure reasons a full report set carries: those of
// reports that say down, up to about 128 KB.
const maxStateReasons = 1024

// reasonsLocked stores the failure reasons a message of p carried, with its
// entries es, on the reports p holds at the sequence the message gave them (a
// reason arriving late does not replace a newer one); it reports whether any changed.
func (f *Fleet) reasonsLocked(p *peer, rs []reason, es []entry) bool {
	if len(rs) == 0 {
		return false
	}
	seqs := make(map[uint64]uint64, len(es))
	for _, e := range es {
		seqs[e.id] = e.seq
	}
	changed := false
	for _, x := range rs {
		seq, sent := seqs[x.id]
		text := strings.ToValidUTF8(x.text, "?")
		if r, ok := p.reports[x.id]; ok && sent && r.seq == seq && r.reason != text {
			r.reason = text
			p.reports[x.id] = r
			changed = true
		}
	}
	return changed
}

func (f *Fleet) pullMsg() []byte {
	return appendHeader(nil, header{typ: msgPull, name: f.cfg.Name})
}

// carried is how many beats carry a change after it was made, and maxCarried how
// many changes a beat carries at most (the latest).
const (
	carried    = 3
	maxCarried = 8
)

// beatMsg is a heartbeat: the digest of this member's reports, its wall clock, and
// the reports changed in this beat and the 2 before (at most maxCarried, the latest),
// so that a change whose own message was lost arrives with one of the next beats,
// each sent several times and relayed by every member.
func (f *Fleet) beatMsg(now time.Time) *bcast {
	b := appendHeader(nil, f.headerLocked(msgBeat, now))
	b = appendUint64(b, f.digest)
	b = appendUint64(b, uint64(max(f.wall().UnixMilli(), 0)))
	var es []entry
	for id, at := range f.recent {
		r := f.own[id]
		if r == nil || f.beats-at >= carried {
			delete(f.recent, id)
			continue
		}
		es = append(es, entry{id: id, flags: r.flags, seq: r.seq, age: uint64(max(now.Sub(r.observed).Milliseconds(), 0))})
	}
	f.beats++
	if len(es) > maxCarried {
		slices.SortFunc(es, func(a, b entry) int { return cmp.Compare(b.seq, a.seq) })
		es = es[:maxCarried]
	}
	b = appendUvarint(b, uint64(len(es)))
	for _, e := range es {
		b = appendEntry(b, e)
	}
	return &bcast{key: f.cfg.Name, msg: b}
}

// running notes that the fleet runs now, noticing a stall (stallLocked) before
// memberlist sends anything queued.
func (f *Fleet) running() {
	now := f.now()
	f.mu.Lock()
	f.stallLocked(now)
	f.mu.Unlock()
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

// directSends is how many times an own change goes straight to every member: at
// once, then every quarter beat (before the next beat carries it too).
const directSends = 3

// maxDirect bounds the changes per beat sent straight to every member: a flip or
// a few go at once; a burst (a cold start of many checks) travels by gossip, beats
// and full report sets, as it would without.
const maxDirect = 4

// direct queues an own change to be sent straight to every member as well (UDP),
// besides gossiping it: directSends datagrams per member, so that when datagrams
// are lost each member most likely has it before the next beat (at most maxDeltas
// changes per beat, at most maxDirect of them). It never blocks: Local runs under
// the scheduler's lock; past 64 queued, the change travels by gossip and beats alone.
func (f *Fleet) direct(b *bcast) {
	if b == nil || b.msg == nil {
		return
	}
	if !b.reason { // a reason takes the place of its change: no budget of its own
		f.mu.Lock()
		ok := f.directed < maxDirect
		f.directed++
		f.mu.Unlock()
		if !ok {
			return
		}
	}
	select {
	case f.directs <- b:
	default:
	}
}

// directSender sends what direct queued, directSends times each.
func (f *Fleet) directSender(ctx context.Context) {
	type resend struct {
		key  string
		msg  []byte
		left int
	}
	var again []resend
	tick := time.NewTicker(f.cfg.Beat / 4)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case b := <-f.directs:
			// A change's reason (reasonMsg) replaces the change it follows in
			// the sends left, rather than adding sends of its own.
			if k := slices.IndexFunc(again, func(r resend) bool { return r.key == b.key }); k >= 0 {
				again[k].msg = b.msg
				continue
			}
			if b.reason {
				continue
			}
			f.sendToAll(b.msg)
			again = append(again, resend{key: b.key, msg: b.msg, left: directSends - 1})
		case <-tick.C:
			kept := again[:0]
			for _, r := range again {
				f.sendToAll(r.msg)
				if r.left--; r.left > 0 {
					kept = append(kept, r)
				}
			}
			clear(again[len(kept):])
			again = kept
		}
	}
}

// sendToAll sends msg to every other member memberlist sees, one datagram each.
func (f *Fleet) sendToAll(msg []byte) {
	f.mu.Lock()
	to := make([]memberlist.Node, 0, len(f.alive))
	for name, n := range f.alive {
		if name != f.cfg.Name {
			to = append(to, n)
		}
	}
	f.mu.Unlock()
	ml := f.ml.Load()
	for i := range to {
		if err := ml.SendBestEffort(&to[i], msg); err != nil {
			log.Debugf("fleet: send to %s: %v", to[i].Name, err)
		}
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
