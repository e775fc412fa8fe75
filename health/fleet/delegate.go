package fleet

import (
	"fmt"
	"slices"

	"github.com/hashicorp/memberlist"
)

// bcast is a queued broadcast; a newer one with the same key replaces it.
type bcast struct {
	key    string
	msg    []byte
	reason bool // a change resent with its failure reason: sent straight only in place of the change (direct)
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

func (d *delegate) NodeMeta(limit int) []byte { return (*Fleet)(d).nodeMeta(limit) }
func (d *delegate) NotifyMsg(b []byte)        { (*Fleet)(d).handle(b, true) }
func (d *delegate) GetBroadcasts(overhead, limit int) [][]byte {
	(*Fleet)(d).running() // what was queued before a stall is dropped, not sent
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
	f.meta[n.Name] = parseMeta(n.Name, n.Meta)
	f.membersMovedLocked()
	delete(f.lost, n.Name)
	membersAlive.Set(float64(len(f.alive)))
	f.nodes.Store(int32(len(f.alive)))
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
	f.membersMovedLocked()
	// A member that memberlist drops is joined again at its address, unless it
	// said it was leaving (Stop; parseMeta). memberlist itself does not tell: it
	// never sets the State of the Node it hands here (its own record of the state
	// is another field). Without this, a member's only way back after a long
	// partition was its own join targets, which it does not retry once gossip to
	// the dead has made them alive to it again: each side held the other dead
	// until memberlist forgot it (a minute or more).
	if !f.meta[n.Name].leaving {
		f.lost[n.Name] = lostMember{addr: n.Address(), since: f.now()}
	}
	membersAlive.Set(float64(len(f.alive)))
	f.nodes.Store(int32(len(f.alive)))
	f.dirtyAll = true
	f.mu.Unlock()
	f.poke()
}
