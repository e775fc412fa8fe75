package routing

import (
	"math/rand/v2"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/miekg/dns"

	"github.com/healthroute/healthroute/health"
	"github.com/healthroute/healthroute/view"
)

// Resolving: a query is answered from the current table, found through one atomic
// pointer, without locks, I/O or health evaluation.

// Query is one question to the Resolver, with what is known of the client.
type Query struct {
	Name   string         // lower-cased, fully qualified
	Type   uint16         // the question's type
	Client netip.Prefix   // ECS prefix, else the source address as a full-length prefix
	Loc    ClientLocation // the client's location from geoip metadata, when known

	trace *view.Trace // explain: records each decision; nil on the DNS path
}

// Answer is the Resolver's reply. RRs and Ns may be shared with other answers: they
// are read-only.
type Answer struct {
	Rcode int
	RRs   []dns.RR
	Ns    []dns.RR
	Extra []dns.RR // apex NS, referrals, MX and SRV: the addresses of the block's names they name
	Scope uint8    // ECS scope prefix length in the client's family: 0 when the answer does not depend on the client
	Zone  string
	// Pass: no record of the block answered (the apex SOA and NS, a type or name it
	// does not define); with fallthrough the next plugin answers instead.
	Pass bool
	// Referral: a delegation's NS records in Ns, not authoritative.
	Referral bool

	// out, once an answer is built per query (a multivalue set's records, a CNAME
	// chain), is the reply message that holds it; buf is the free room after what is
	// built so far (see room).
	Out *ReplyMsg
	buf []dns.RR

	LeafSet   *PlanSet    // the record set the answer came from (metrics)
	Leaf      *MemberNode // and its member; nil for a multivalue set
	ResortSet *PlanSet    // the deepest record set that answered in its last resort, if any
	chase     bool        // step: a CNAME that chase follows
}

// Resolver answers queries from the latest compiled table. It is safe for concurrent
// use; ResolveInto takes no lock.
type Resolver struct {
	Plan      *Plan
	Table     atomic.Pointer[Table]
	pubMu     sync.Mutex                   // serialises Publish and SetOverrides; queries never take it
	over      map[string]bool              // guarded by pubMu
	published bool                         // a table was published, with metrics and logs; guarded by pubMu
	Latency   atomic.Pointer[LatencyTable] // nil: no latency_table
	cfg       *Config
	// OnPublish is called after each compiled table is swapped in (not for a new
	// snapshot that changes no routing), under pubMu, with the table replaced and the
	// time compiling took: metrics and logs hang off it, outside the compile path.
	OnPublish func(prev, next *Table, took time.Duration)
	// Rand returns a uniform number in [0, n); nil uses math/rand/v2. Tests seed it.
	Rand func(n uint64) uint64
}

// New returns a Resolver for cfg, answering as if every check were new. It
// lets record sets share members written alike first, as every way to a Resolver
// needs (parse, or a Config built by hand); that is idempotent, so a second Resolver
// on one Config answers the same.
func New(cfg *Config) *Resolver {
	shareMembers(cfg)
	r := &Resolver{Plan: newPlan(cfg), cfg: cfg}
	r.Table.Store(Compile(r.Plan, nil, nil)) // no metrics or logs: setup may still fail
	return r
}

// LoadLatency reads the latency table at path, at most limit bytes, and answers from
// it; on an error the table in use stays.
func (r *Resolver) LoadLatency(path string, limit int64) (*LatencyTable, error) {
	t, err := LoadLatencyTable(path, r.Plan.regionIDs, limit)
	if err == nil {
		r.Latency.Store(t)
	}
	return t, err
}

// NeedsLocation reports whether any record ranks clients by geoip location, so the
// handler reads the metadata only then.
func (r *Resolver) NeedsLocation() bool { return r.Plan.needsLoc }

// Publish compiles the routing table for snap and swaps it in.
func (r *Resolver) Publish(snap *health.Snapshot) {
	r.pubMu.Lock()
	defer r.pubMu.Unlock()
	if prev := r.Table.Load(); r.published && !routingChanged(prev.Snap, snap) {
		// Only first results or timestamps moved (e.g. thousands of checks reporting
		// for the first time at startup): routing is the same, so keep the compiled
		// state and only take the new snapshot, which Ready reads.
		r.Table.Store(&Table{Plan: prev.Plan, Snap: snap, Over: prev.Over, States: prev.States, Judged: prev.Judged,
			Changed: []*Node{}, Flipped: []*health.Spec{}})
		return
	}
	r.publishLocked(snap)
}

// routingChanged reports whether any check's probed state differs between two
// snapshots; Seen and Since do not affect answers.
func routingChanged(prev, next *health.Snapshot) bool {
	changed := false
	next.Diff(prev, func(fp string) {
		changed = changed || prev.Status(fp).Down != next.Status(fp).Down
	})
	return changed
}

// SetOverrides replaces the operator overrides (check name -> forced status) and
// republishes; the next query sees them.
func (r *Resolver) SetOverrides(over map[string]bool) {
	r.pubMu.Lock()
	defer r.pubMu.Unlock()
	r.over = over
	r.publishLocked(r.Table.Load().Snap)
}

func (r *Resolver) publishLocked(snap *health.Snapshot) {
	first := !r.published
	r.published = true
	start := time.Now()
	prev := r.Table.Load() // only publishers store, under pubMu
	t := recompile(prev, snap, r.over)
	if first {
		t.Changed, t.Flipped = nil, nil // the first publication reports every node and check
	}
	r.Table.Store(t)
	if r.OnPublish != nil {
		r.OnPublish(prev, t, time.Since(start))
	}
}

func (r *Resolver) rand(n uint64) uint64 {
	if r.Rand != nil {
		return r.Rand(n)
	}
	return rand.Uint64N(n)
}

// ResolveInto answers q into ans, which is zero on entry. The DNS path keeps both on the
// handler's frame: passing them by pointer keeps each frame below it small, since
// every query runs on a goroutine whose stack starts small and is copied whenever it
// has to grow.
func (r *Resolver) ResolveInto(q *Query, ans *Answer) {
	t := r.Table.Load()
	p := t.Plan
	zone := MatchZone(p.zones, q.Name)
	if zone == "" {
		ans.Rcode = dns.RcodeRefused
		return
	}
	if q.Name == zone && (q.Type == dns.TypeSOA || q.Type == dns.TypeNS) && r.apex(t, q, zone, ans) {
		return
	}
	if p.cuts != nil && r.referral(t, q, q.Name, zone, ans) {
		return
	}
	r.step(t, q, q.Name, zone, ans)
	if ans.chase {
		r.chase(t, q, ans)
	}
	if q.Type == dns.TypeMX || q.Type == dns.TypeSRV {
		ans.Extra = append(ans.Extra, r.additional(t, q, ans.RRs, zone)...) // after a chase's referral glue
	}
}

// apex answers the zone's SOA and, with `ns`, its NS query (with glue), reporting
// whether it did. It is its own function so its frame is paid only by apex queries.
//
//go:noinline
func (r *Resolver) apex(t *Table, q *Query, zone string, ans *Answer) bool {
	p := t.Plan
	switch q.Type {
	case dns.TypeSOA:
		*ans = Answer{Rcode: dns.RcodeSuccess, RRs: p.soa[zone], Zone: zone, Pass: true}
		return true
	case dns.TypeNS:
		if ns := p.ns[zone]; ns != nil {
			*ans = Answer{Rcode: dns.RcodeSuccess, RRs: ns, Extra: r.glue(t, q, ns, zone), Zone: zone, Pass: true}
			return true
		}
	}
	return false
}

// referral answers a name at or below a delegation (NS records below the zone
// apex) as CoreDNS's file plugin does: the highest cut's NS records in the authority
// section, the addresses of its name servers below the cut in the additional
// section, not authoritative. A DS query at the cut itself is answered by the parent,
// as any other record.
//
// It fills ans (zero on entry) and reports whether name is delegated; its own
// function, so only blocks with delegations pay for its frame.
//
//go:noinline
func (r *Resolver) referral(t *Table, q *Query, name, zone string, ans *Answer) bool {
	p := t.Plan
	var cut *Entry
	for off, end := 0, false; !end && len(name)-off > len(zone); off, end = dns.NextLabel(name, off) {
		if e, ok := p.cuts[name[off:]]; ok && (off > 0 || q.Type != dns.TypeDS) {
			cut = e // keep going: the highest cut wins
		}
	}
	if cut == nil {
		return false
	}
	ans.Rcode, ans.Zone, ans.Referral = dns.RcodeSuccess, zone, true
	ans.Ns, ans.Scope = r.walk(t, cut, cut.Node(dns.TypeNS), q, ans)
	for _, rr := range ans.Ns {
		if ns := rr.(*dns.NS).Ns; underZone(strings.ToLower(ns), cut.name()) {
			ans.Extra = append(ans.Extra, r.addrs(t, q, ns, zone)...)
		}
	}
	return true
}

// additional returns the A and AAAA records of the block's names that MX and SRV
// records of rrs point to, each name once, as CoreDNS's file plugin adds them.
func (r *Resolver) additional(t *Table, q *Query, rrs []dns.RR, zone string) []dns.RR {
	var extra []dns.RR
	var seen []string
	for _, rr := range rrs {
		var name string
		switch x := rr.(type) {
		case *dns.MX:
			name = x.Mx
		case *dns.SRV:
			name = x.Target
		default:
			continue
		}
		name = strings.ToLower(name)
		if !underZone(name, zone) || slices.Contains(seen, name) {
			continue
		}
		seen = append(seen, name)
		extra = append(extra, r.addrs(t, q, name, zone)...)
	}
	return extra
}

// addrs returns the A and AAAA records that name (an owner of the block's records,
// not a wildcard's match) answers for q's client.
func (r *Resolver) addrs(t *Table, q *Query, name, zone string) []dns.RR {
	e := t.Plan.Names[name]
	if e == nil {
		return nil
	}
	var out []dns.RR
	for _, qt := range [...]uint16{dns.TypeA, dns.TypeAAAA} {
		if n := e.Node(qt); n != nil {
			var sub Answer
			rrs, _ := r.walk(t, e, n, q, &sub)
			out = append(out, rrs...)
		}
	}
	return out
}

// step answers name (q.Name or a CNAME target) from t into ans, which is zero on entry,
// without following a CNAME; ans.chase reports that the answer is a CNAME to follow.
func (r *Resolver) step(t *Table, q *Query, name, zone string, ans *Answer) {
	p := t.Plan
	ans.Rcode, ans.Zone = dns.RcodeSuccess, zone
	e, wild := p.lookup(name, zone)
	var n *Node
	if e != nil {
		if n = e.cname; n == nil {
			n = e.Node(q.Type)
		}
	}
	if n == nil { // NXDOMAIN, or NODATA
		ans.Ns, ans.Pass = p.neg[zone], true
		if e == nil && !p.exists[name] && name != zone {
			ans.Rcode = dns.RcodeNameError
		}
		return
	}
	ans.RRs, ans.Scope = r.walk(t, e, n, q, ans)
	if len(ans.RRs) == 0 { // a client-dependent group with no record for this client
		ans.Ns, ans.LeafSet, ans.Leaf, ans.ResortSet = p.neg[zone], nil, nil, nil
		return
	}
	if wild { // not e.wild(): that reads e's record set, a cache miss per query at 10,000 names
		ans.RRs = rename(ans.RRs, name)
	}
	ans.chase = n == e.cname && q.Type != dns.TypeCNAME
}

// maxChase is how many CNAMEs a chase follows after the first, as CoreDNS's file
// plugin does; a longer chain is answered as far as it got.
const maxChase = 8

// chase follows the CNAME that ans holds through the block's own names, as CoreDNS's
// file plugin does: each target is answered by its own record for the same client,
// and the answer's scope is the largest of any step. It stops at a target outside
// the block's zones or one the next plugin serves (the client's resolver follows
// it), at a name already in the chain (a loop), and after maxChase steps.
func (r *Resolver) chase(t *Table, q *Query, ans *Answer) {
	p := t.Plan
	chain := append(ans.room(largeRoom), ans.RRs...) // in place when the first step built its RRs in the room
	ans.chase = false
	for range maxChase {
		target := chain[len(chain)-1].(*dns.CNAME).Target
		zone := MatchZone(p.zones, target)
		if zone == "" || inChain(chain, target) {
			break
		}
		if p.cuts != nil {
			ref := Answer{Out: ans.Out, buf: chain[len(chain):]}
			if r.referral(t, q, target, zone, &ref) {
				ans.Ns, ans.Extra = ref.Ns, ref.Extra // the CNAME, and where its target is delegated
				break
			}
		}
		next := Answer{Out: ans.Out, buf: chain[len(chain):]} // a step built per query lands after the chain
		r.step(t, q, target, zone, &next)
		if next.Pass && p.fall.Through(target) {
			break // the next plugin's name: the client's resolver asks for it
		}
		chain = append(chain, next.RRs...) // in place when next built its RRs in the room
		ans.Scope = max(ans.Scope, next.Scope)
		ans.Rcode, ans.Ns = next.Rcode, next.Ns // Zone stays the question's (metrics)
		if !next.chase {
			break
		}
	}
	ans.RRs = chain
}

// inChain reports whether name owns a record of chain.
func inChain(chain []dns.RR, name string) bool {
	for _, rr := range chain {
		if strings.EqualFold(rr.Header().Name, name) {
			return true
		}
	}
	return false
}

// glue returns the A and AAAA answers, for q's client, of the in-zone name servers
// in ns.
func (r *Resolver) glue(t *Table, q *Query, ns []dns.RR, zone string) []dns.RR {
	var out []dns.RR
	for _, rr := range ns {
		out = append(out, r.addrs(t, q, rr.(*dns.NS).Ns, zone)...)
	}
	return out
}

// MatchZone returns the longest of zones that contains name ("" for none). Unlike
// plugin.Zones.Matches it does not allocate; names and zones are lower-cased FQDNs.
func MatchZone(zones []string, name string) string {
	best := ""
	for _, z := range zones {
		if len(z) <= len(best) {
			continue
		}
		if underZone(name, z) {
			best = z
		}
	}
	return best
}

// underZone reports whether name is z or below it, without allocating; both are
// lower-cased FQDNs.
func underZone(name, z string) bool {
	return z == "." || name == z || (len(name) > len(z) && name[len(name)-len(z)-1] == '.' && name[len(name)-len(z):] == z)
}

// lookup finds the entry for name: the exact owner, else the wildcard at the closest
// encloser (RFC 4592); wild reports the latter. It does not allocate.
func (p *Plan) lookup(name, zone string) (e *Entry, wild bool) {
	if e, ok := p.Names[name]; ok {
		return e, false // wildcards are filed in p.wild only (placeEntry)
	}
	if len(p.wild) == 0 {
		return nil, false
	}
	if len(name) > 2 && name[0] == '*' && name[1] == '.' {
		if e, ok := p.wild[name[2:]]; ok {
			return e, true // the wildcard owner itself, asked literally
		}
	}
	if p.exists[name] {
		return nil, false
	}
	for off, end := dns.NextLabel(name, 0); !end; off, end = dns.NextLabel(name, off) {
		parent := name[off:]
		if e, ok := p.wild[parent]; ok {
			return e, true
		}
		if p.Names[parent] != nil || p.exists[parent] || parent == zone || len(parent) < len(zone) {
			return nil, false // the closest encloser has no wildcard
		}
	}
	return nil, false
}

// walk descends from n, a node of e, to a leaf: static nodes by their precomputed
// choice, client dependent ones by ranking for q. scope is the ECS scope of the
// choices made.
func (r *Resolver) walk(t *Table, e *Entry, n *Node, q *Query, ans *Answer) (rrs []dns.RR, scope uint8) {
	for {
		st := t.State(n.ID)
		ans.LeafSet = n.Set
		var i int32
		switch {
		case n.DynHealth || n.dynOrder():
			scope = max(scope, r.nodeScope(n, q))
			if i = r.pickForClient(t, n, q); i >= 0 && !r.memberOK(t, n, i, q) {
				ans.ResortSet = n.Set // chose an unhealthy member: no healthy one applied
			}
			if i < 0 {
				if q.trace != nil {
					r.explain(t, n, q, -1)
				}
				return nil, scope // no record applies to this client: NODATA
			}
		case st.mode == pickSet:
			if st.FailOpen {
				ans.ResortSet = n.Set
			}
			ans.Leaf = nil
			rrs := r.pickSet(t.Plan, e, n, st, ans.room(len(st.Cands)))
			if q.trace != nil {
				r.explain(t, n, q, -1)
			}
			return rrs, scope
		default:
			if st.FailOpen {
				ans.ResortSet = n.Set
			}
			i = r.pick(st)
		}
		if q.trace != nil {
			r.explain(t, n, q, i)
		}
		mn := &n.Members[i]
		if mn.Child == nil {
			ans.Leaf = mn
			l := e.leaf(t.Plan, n, mn)
			k := l.values()
			if k > 1 {
				return l.rotation(int(r.rand(uint64(k)))), scope
			}
			return l.One[:k:k], scope // the one value in place
		}
		n = mn.Child
	}
}

func (r *Resolver) pick(st *NodeState) int32 {
	switch st.mode {
	case pickWeight:
		x := uint32(r.rand(uint64(st.Cum[len(st.Cum)-1])))
		lo, hi := 0, len(st.Cum)-1
		for lo < hi { // first cumulative weight above x
			mid := (lo + hi) / 2
			if st.Cum[mid] > x {
				hi = mid
			} else {
				lo = mid + 1
			}
		}
		return st.Cands[lo]
	case pickUniform:
		return st.Cands[r.rand(uint64(len(st.Cands)))]
	}
	return st.Cands[0]
}

// maxMultivalue is how many records a multivalue answer holds at most (docs/routing.md#multivalue).
const maxMultivalue = 8

// pickSet answers a multivalue node: every candidate when there are at most eight, else
// eight distinct ones at random, in random order, appended to out (the reply's room:
// the slice is the response's own).
func (r *Resolver) pickSet(p *Plan, e *Entry, n *Node, st *NodeState, out []dns.RR) []dns.RR {
	k := len(st.Cands)
	var chosen [maxMultivalue]int32
	if k <= maxMultivalue {
		copy(chosen[:], st.Cands)
	} else { // reservoir sampling: alloc-free, uniform over 8-subsets
		copy(chosen[:], st.Cands[:maxMultivalue])
		for i := maxMultivalue; i < k; i++ {
			if j := r.rand(uint64(i + 1)); j < maxMultivalue {
				chosen[j] = st.Cands[i]
			}
		}
		k = maxMultivalue
	}
	for i := k - 1; i > 0; i-- { // shuffle, so the order varies too
		j := r.rand(uint64(i + 1))
		chosen[i], chosen[j] = chosen[j], chosen[i]
	}
	owned := e.owns(n)
	for _, i := range chosen[:k] {
		out = append(out, e.leafOwned(p, n, &n.Members[i], owned).RRs()...)
	}
	return out
}

// rename copies rrs with the owner name set to name (wildcard answers).
func rename(rrs []dns.RR, name string) []dns.RR {
	out := make([]dns.RR, len(rrs))
	for i, rr := range rrs {
		out[i] = dns.Copy(rr)
		out[i].Header().Name = name
	}
	return out
}
