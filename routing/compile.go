package routing

import (
	"encoding/binary"
	"slices"

	"github.com/healthroute/healthroute/health"
)

// A table is the plan compiled against one health snapshot: compile builds it whole,
// recompile rebuilds only the nodes a snapshot change reaches. See tree.go for the plan.

type mode uint8

const (
	pickFirst   mode = iota // candidates in preference order: the first
	pickWeight              // by cumulative weight
	pickUniform             // uniformly at random
	pickSet                 // multivalue: up to eight at random
)

// NodeState is a node's health-dependent selection data.
type NodeState struct {
	healthy  bool     // a healthy answer exists in this branch (static nodes; for evaluate target health)
	FailOpen bool     // no member is healthy: the last resort is in force (static nodes)
	mode     mode     // how to pick among cands
	Cands    []int32  // member indices a query may pick
	Cum      []uint32 // pickWeight: cumulative weights of cands
	// ok is each member's health as far as it does not depend on the client: its
	// check, and for evaluate target health into a static child, the child's branch.
	// In static nodes that is all of it.
	OK []bool
}

// Table is a plan evaluated against one health snapshot; immutable once stored.
type Table struct {
	Plan *Plan
	Snap *health.Snapshot
	Over map[string]bool // operator overrides by check name: true healthy, false unhealthy
	// st is the nodes' states in chunks of stateChunk, by node id: a new table copies
	// only the chunks whose nodes it evaluated again and shares the rest. Nodes in the
	// same state share one NodeState (see interner); states are never written.
	States [][]*NodeState
	Judged []bool // by index in plan.checks: each check's status
	// changed is the nodes evaluated for this table and flipped the checks whose
	// status differs from the table it replaced; both nil when everything was.
	Changed []*Node
	Flipped []*health.Spec
}

// stateChunk is how many node states a table copies when one of them changes: a flip
// copies the list of chunks and the chunks it reaches, and checks used by members all
// over the configuration reach a chunk per node, so small chunks copy least.
const stateChunk = 32

// State is node id's state in t.
func (t *Table) State(id int32) *NodeState {
	u := uint32(id) // ids are not negative: unsigned division is a shift
	return t.States[u/stateChunk][u%stateChunk]
}

// Healthy is a check's status in t, as the health package judges it with t's
// operator overrides.
func (t *Table) Healthy(s *health.Spec) bool { return t.Snap.Judge(s, t.Over) }

// Compile evaluates every node of p against snap and the overrides, children first.
func Compile(p *Plan, snap *health.Snapshot, over map[string]bool) *Table {
	t := &Table{Plan: p, Snap: snap, Over: over, Judged: make([]bool, len(p.Checks)),
		States: make([][]*NodeState, (len(p.Nodes)+stateChunk-1)/stateChunk)}
	for i := range t.States {
		t.States[i] = make([]*NodeState, min(stateChunk, len(p.Nodes)-i*stateChunk))
	}
	for i, s := range p.Checks {
		t.Judged[i] = t.Healthy(s)
	}
	done := make([]bool, len(p.Nodes))
	t.eval(p.Nodes, func(n *Node) bool {
		was := done[n.ID]
		done[n.ID] = true
		return !was
	})
	return t
}

// recompile is compile for a new snapshot or new overrides, given the table they
// replace: only the checks whose state or override changed are judged again (with
// their calculated parents), only the nodes with a member whose check changed status
// and the nodes that alias them (transitively) are evaluated again; the others keep
// prev's state, shared chunk by chunk. Cost: the snapshot's diff, plus what it reaches.
func recompile(prev *Table, snap *health.Snapshot, over map[string]bool) *Table {
	p := prev.Plan
	t := &Table{Plan: p, Snap: snap, Over: over, Judged: slices.Clone(prev.Judged),
		States: slices.Clone(prev.States), Changed: []*Node{}, Flipped: []*health.Spec{}}
	pending := map[*Node]bool{}
	var mark func(n *Node)
	mark = func(n *Node) {
		if pending[n] {
			return
		}
		pending[n] = true
		t.Changed = append(t.Changed, n)
		for _, u := range n.up() {
			mark(u)
		}
	}
	for _, i := range touched(prev, snap, over) {
		if t.Judged[i] = t.Healthy(p.Checks[i]); t.Judged[i] != prev.Judged[i] {
			t.Flipped = append(t.Flipped, p.Checks[i])
			for _, id := range p.usersOf(i) {
				mark(p.Nodes[id])
			}
		}
	}
	for _, n := range t.Changed { // copy on write: prev's chunks stay as they are
		if c := n.ID / stateChunk; &t.States[c][0] == &prev.States[c][0] {
			t.States[c] = slices.Clone(prev.States[c])
		}
	}
	t.eval(t.Changed, func(n *Node) bool {
		was := pending[n]
		delete(pending, n)
		return was
	})
	return t
}

// touched returns the checks (indexes in the plan's checks) whose status may differ
// between prev and snap with over: those whose probed state or override changed, and
// their calculated parents, transitively.
func touched(prev *Table, snap *health.Snapshot, over map[string]bool) []int32 {
	p := prev.Plan
	seen := map[int32]bool{}
	var out []int32
	add := func(is []int32) {
		for _, i := range is {
			if !seen[i] {
				seen[i] = true
				out = append(out, i)
			}
		}
	}
	snap.Diff(prev.Snap, func(fp string) { add(p.byFP[fp]) })
	for name, v := range over {
		if was, ok := prev.Over[name]; !ok || was != v {
			add(p.byName[name])
		}
	}
	for name := range prev.Over {
		if _, ok := over[name]; !ok {
			add(p.byName[name])
		}
	}
	for k := 0; k < len(out); k++ {
		add(p.calcParents[out[k]])
	}
	return out
}

// eval computes the state of nodes, each after its children, for the nodes take
// reports pending (taking them); the others' state in t is current.
func (t *Table) eval(nodes []*Node, take func(*Node) bool) {
	in := newInterner()
	var eval func(n *Node)
	eval = func(n *Node) {
		if !take(n) {
			return
		}
		for i := range n.Members {
			if c := n.Members[i].Child; c != nil {
				eval(c)
			}
		}
		ok := in.ok[:0] // the children are done: the scratch is free
		for i := range n.Members {
			mn := &n.Members[i]
			h := mn.check < 0 || t.Judged[mn.check] // no check: always healthy
			if mn.Child != nil && mn.Member.ETH && !mn.Child.DynHealth {
				h = h && t.State(mn.Child.ID).healthy
			}
			ok = append(ok, h)
		}
		in.ok = ok
		t.States[n.ID/stateChunk][n.ID%stateChunk] = in.state(staticState(n, ok, in))
	}
	for _, n := range nodes {
		eval(n)
	}
}

// interner gives out one shared copy of each distinct node state and selection slice
// (a state's ok, cands and cum), so that a table holds one per distinct value rather
// than one per node: in a large configuration most nodes have the same shape and
// health. Tables never write them. It also holds staticState's scratch, so that
// evaluating a node allocates only what it is the first to need.
type interner struct {
	states             map[stateKey]*NodeState
	key                []byte
	okSet              map[string][]bool
	candSet            map[string][]int32
	cumSet             map[string][]uint32
	ok, none           []bool
	healthy, all, pick []int32
	cum                []uint32
}

func newInterner() *interner {
	return &interner{states: map[stateKey]*NodeState{}, okSet: map[string][]bool{}, candSet: map[string][]int32{}, cumSet: map[string][]uint32{}}
}

// stateKey identifies a node state, every field of it, whose slices in has given
// out: equal slices are the same slices.
type stateKey struct {
	healthy, failOpen bool
	mode              mode
	ok                *bool
	cands             *int32
	cum               *uint32
	nok, ncands, ncum int
}

// state returns the shared copy of st, whose slices in gave out.
func (in *interner) state(st NodeState) *NodeState {
	k := stateKey{healthy: st.healthy, failOpen: st.FailOpen, mode: st.mode,
		ok: first(st.OK), cands: first(st.Cands), cum: first(st.Cum),
		nok: len(st.OK), ncands: len(st.Cands), ncum: len(st.Cum)}
	if v, ok := in.states[k]; ok {
		return v
	}
	v := &st
	in.states[k] = v
	return v
}

// first is the address of s's first element, nil when s is empty.
func first[T any](s []T) *T {
	if len(s) == 0 {
		return nil
	}
	return &s[0]
}

// bools returns the shared copy of s.
func (in *interner) bools(s []bool) []bool {
	if len(s) == 0 {
		return nil
	}
	in.key = in.key[:0]
	for _, b := range s {
		in.key = append(in.key, BoolByte(b))
	}
	if v, ok := in.okSet[string(in.key)]; ok {
		return v
	}
	v := slices.Clip(slices.Clone(s))
	in.okSet[string(in.key)] = v
	return v
}

func BoolByte(b bool) byte {
	if b {
		return 1
	}
	return 0
}

// intern returns the shared copy of s in m.
func intern[T int32 | uint32](in *interner, m map[string][]T, s []T) []T {
	if len(s) == 0 {
		return nil
	}
	in.key = in.key[:0]
	for _, v := range s {
		in.key = binary.LittleEndian.AppendUint32(in.key, uint32(v))
	}
	if v, ok := m[string(in.key)]; ok {
		return v
	}
	v := slices.Clip(slices.Clone(s))
	m[string(in.key)] = v
	return v
}

// staticState applies a policy to a node's member health: docs/routing.md#choose for the
// policies whose choice does not depend on the client. ok may be scratch: the state
// holds in's copies.
func staticState(n *Node, ok []bool, in *interner) NodeState {
	st := NodeState{OK: in.bools(ok)}
	healthy, all := in.healthy[:0], in.all[:0]
	for i, h := range ok {
		if h {
			healthy = append(healthy, int32(i))
		}
		all = append(all, int32(i))
	}
	in.healthy, in.all = healthy, all
	st.healthy = len(healthy) > 0
	st.FailOpen = !st.healthy
	if n.DynHealth {
		// The client decides what is healthy: keep ok, and for weighted groups the
		// last resort, which does not depend on health at all.
		st.healthy, st.FailOpen = false, false
		if n.Set.Policy == PolicyWeighted {
			in.none = slices.Grow(in.none[:0], len(ok))[:len(ok)]
			clear(in.none)
			last := staticState(&Node{Set: n.Set, Members: n.Members}, in.none, in)
			st.mode, st.Cands, st.Cum = last.mode, last.Cands, last.Cum
		}
		return st
	}
	var cands []int32
	switch n.Set.Policy {
	case PolicyLatency, PolicyGeolocation, PolicyGeoproximity, PolicyIPBased:
		return st // ranked per query; healthy = any member healthy
	case PolicySimple:
		st.mode, cands = pickFirst, all[:1]
	case PolicyFailover:
		st.mode, cands = pickFirst, failoverCands(n, ok, in)
	case PolicyWeighted:
		st.mode, cands, st.Cum = weightedCands(n, healthy, all, st.healthy, in)
	case PolicyMultivalue:
		st.mode, cands = pickSet, healthy
		if !st.healthy {
			cands = all
		}
	}
	st.Cands = intern(in, in.candSet, cands)
	return st
}

// failoverCands is the primary first; the secondary when the primary is unhealthy;
// the primary again when both are (docs/routing.md#failover).
func failoverCands(n *Node, ok []bool, in *interner) []int32 {
	order := in.pick[:0]
	for _, r := range []Role{RolePrimary, RoleSecondary} {
		for i, mn := range n.Members {
			if mn.Member.Role == r {
				order = append(order, int32(i))
			}
		}
	}
	in.pick = order
	for k, i := range order {
		if ok[i] {
			return order[k : k+1]
		}
	}
	return order[:1]
}

// weightedCands is healthy nonzero weights by weight; else healthy zero weights
// uniformly; else the last resort: all nonzero by weight, or all uniformly
// (docs/routing.md#weighted). cum is the interned cumulative weights for pickWeight.
func weightedCands(n *Node, healthy, all []int32, anyHealthy bool, in *interner) (m mode, cands []int32, cum []uint32) {
	pool := healthy
	if !anyHealthy {
		pool = all
	}
	nonzero := in.pick[:0]
	for _, i := range pool {
		if n.Members[i].Member.Weight > 0 {
			nonzero = append(nonzero, i)
		}
	}
	in.pick = nonzero
	if len(nonzero) == 0 {
		return pickUniform, pool, nil
	}
	sums := in.cum[:0]
	var sum uint32
	for _, i := range nonzero {
		sum += uint32(n.Members[i].Member.Weight)
		sums = append(sums, sum)
	}
	in.cum = sums
	return pickWeight, nonzero, intern(in, in.cumSet, sums)
}
