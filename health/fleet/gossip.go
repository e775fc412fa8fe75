package fleet

import (
	"context"
	"slices"
	"time"
)

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
