package healthroute

import (
	"encoding/binary"
	"math/rand/v2"
	"net"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coredns/coredns/plugin"
	"github.com/coredns/coredns/plugin/pkg/dnsutil"
	"github.com/coredns/coredns/plugin/pkg/fall"
	"github.com/miekg/dns"

	"github.com/healthroute/healthroute/health"
	"github.com/healthroute/healthroute/view"
)

// The routing tree has two layers. A plan is built once per configuration: one node
// per record group (record set, type), shared by every name whose alias tree reaches
// it, so the plan grows linearly with the configuration however deep aliases nest.
// Leaves hold their RRs prebuilt under their own record set's name; a name that
// reaches a leaf through an alias answers under its own name (alias answers are
// flattened, docs/routing.md#answers), from a copy its entry builds the first time it is asked
// and keeps. A table is built from
// a plan and a health snapshot each time health changes: for every node, the members a
// query may pick and how. Queries read one table through an atomic pointer and never
// evaluate health themselves.

// node is one record group: a record set's members of one type.
//
// Fields are ordered by size, so that the struct packs without padding: a large
// configuration holds one per record group. What only some groups have is behind
// links, which most leave nil.
type node struct {
	set     *RecordSet
	members []mnode
	links   *nodeLinks // aliases to or from this group, the ip index; nil for none
	id      int32      // index into table.st
	qtype   uint16

	// dynHealth: whether a healthy answer exists depends on the client (geolocation
	// and ip groups, and groups that evaluate target health into them;
	// docs/routing.md#evaluate-target-health). With dynOrder, the node is client
	// dependent; static nodes are decided entirely at compile.
	dynHealth bool
	byLoc     bool // the client's geoip location can change the choice
}

// dynOrder reports whether n's policy ranks members by the client (latency,
// geolocation, geoproximity, ip).
func (n *node) dynOrder() bool {
	switch n.set.Policy {
	case Latency, Geolocation, Geoproximity, IPBased:
		return true
	}
	return false
}

// nodeLinks is what a node with aliases or an ip index has beyond the others.
type nodeLinks struct {
	healthKids []*node             // evaluate target health into client-dependent health: their scope counts
	up         []*node             // the nodes with a member aliasing this one
	ip         *prefixIndex[int32] // ip: block -> member index; nil for other policies
	ipDefault  int32               // ip: the default member, -1 for none
}

// link returns n's links, creating them.
func (n *node) link() *nodeLinks {
	if n.links == nil {
		n.links = &nodeLinks{ipDefault: -1}
	}
	return n.links
}

// healthKids returns the client-dependent nodes that n's members evaluate the
// target health of.
func (n *node) healthKids() []*node {
	if n.links == nil {
		return nil
	}
	return n.links.healthKids
}

// up returns the nodes with a member aliasing n.
func (n *node) up() []*node {
	if n.links == nil {
		return nil
	}
	return n.links.up
}

// mnode is a member of a node: a leaf with prebuilt RRs, or an alias to a child node.
type mnode struct {
	m *Member
	leaf
	child  *node // alias target
	region int32 // latency: the plan's region id
	check  int32 // the member's check: its index in plan.checks, -1 for none
	series int32 // the member's answers_total series in its record set (Config.memberSeries)
}

// leaf is a member's prebuilt answer: its RRs (owner = the record set's name). A
// single value, the common case, sits in the leaf itself, and answers slice it where
// it is; several sit in a ring the leaf points to. Never mutated; an alias member's
// leaf is empty. A large configuration holds one per member: one field, not two.
type leaf struct {
	one [1]dns.RR // the value, or a *ring for several
}

// ring holds a leaf's several values, then all but the last once more, so that each
// rotation of the values, for a random order (docs/routing.md#simple), is a window of
// the one array and a query picks one without copying. It is a dns.RR only to share
// the leaf's one field with a single value (its embedded RR is nil): it is never
// answered, as rotation sees to.
type ring struct {
	dns.RR
	rrs []dns.RR
}

// newLeaf builds m's leaf; al, nil for a leaf built after its plan, has the plan's
// arrays.
func newLeaf(owner string, m *Member, ttl uint32, al *planAlloc) leaf {
	var buf [1]dns.RR
	rrs := leafRRs(buf[:0], owner, m, ttl, al)
	switch len(rrs) {
	case 0:
		return leaf{}
	case 1:
		return leaf{one: [1]dns.RR{rrs[0]}}
	}
	r := &ring{rrs: append(make([]dns.RR, 0, 2*len(rrs)-1), rrs...)}
	r.rrs = append(r.rrs, rrs[:len(rrs)-1]...)
	return leaf{one: [1]dns.RR{r}}
}

// values is how many RRs the leaf answers.
func (l *leaf) values() int {
	if r, ok := l.one[0].(*ring); ok {
		return (len(r.rrs) + 1) / 2
	}
	if l.one[0] != nil {
		return 1
	}
	return 0
}

// rrs returns the leaf's RRs in their written order, capped.
func (l *leaf) rrs() []dns.RR { return l.rotation(0) }

// rotation returns the RRs starting at the i-th value, capped.
func (l *leaf) rotation(i int) []dns.RR {
	if r, ok := l.one[0].(*ring); ok {
		k := (len(r.rrs) + 1) / 2
		return r.rrs[i : i+k : i+k]
	}
	if l.one[0] != nil {
		return l.one[:]
	}
	return nil
}

// entry is what a name answers: one node per type it serves, from the name's one
// record block or its blocks of one type each.
//
// A large configuration holds one per name: what only some names have is behind more,
// which most leave nil.
type entry struct {
	a, aaaa, cname *node
	more           *entryMore
	set            *RecordSet // the name's first block, whose Name is the owner (see name)
}

// entryMore is what a name with other types or aliases has beyond the others.
type entryMore struct {
	other   []*node   // every other type
	aliased *sync.Map // *mnode -> *leaf: leaves of other names, named for this one; nil without aliases
}

// name is e's owner; "*.parent" for a wildcard, whose answers carry the query name.
func (e *entry) name() string { return e.set.Name }

// wild reports whether e's owner is a wildcard.
func (e *entry) wild() bool { return strings.HasPrefix(e.name(), "*.") }

// extra returns e's more, creating it.
func (e *entry) extra() *entryMore {
	if e.more == nil {
		e.more = &entryMore{}
	}
	return e.more
}

// node returns the node that answers qtype at e, nil for none.
func (e *entry) node(qtype uint16) *node {
	switch qtype {
	case dns.TypeA:
		return e.a
	case dns.TypeAAAA:
		return e.aaaa
	case dns.TypeCNAME:
		return e.cname
	}
	if e.more != nil {
		for _, n := range e.more.other {
			if n.qtype == qtype {
				return n
			}
		}
	}
	return nil
}

// nodes returns every node of e.
func (e *entry) nodes() []*node {
	var out, other []*node
	if e.more != nil {
		other = e.more.other
	}
	for _, n := range append([]*node{e.a, e.aaaa, e.cname}, other...) {
		if n != nil {
			out = append(out, n)
		}
	}
	return out
}

// leaf returns n's member mn as e answers it: the member's own leaf when it belongs to
// e's record set (or e is a wildcard, whose answers are renamed anyway); else a copy
// named for e, built on first use and kept, so queries after the first allocate
// nothing and memory grows only with the (name, leaf) pairs actually answered.
func (e *entry) leaf(p *plan, n *node, mn *mnode) *leaf {
	if n.set.Name == e.name() || e.wild() {
		return &mn.leaf
	}
	aliased := e.more.aliased // e reaches n through an alias
	if l, ok := aliased.Load(mn); ok {
		return l.(*leaf)
	}
	l := newLeaf(e.name(), mn.m, n.set.ttl(p.ttl), nil) // the target's TTL, as Route 53 answers aliases
	v, _ := aliased.LoadOrStore(mn, &l)
	return v.(*leaf)
}

// plan is the health-independent part of the routing tree.
type plan struct {
	ttl    uint32
	zones  []string
	names  map[string]*entry   // exact owners
	wild   map[string]*entry   // wildcard owners, keyed by the parent of "*."
	exists map[string]bool     // wildcard owners and empty non-terminals: with names, every name that exists
	soa    map[string][]dns.RR // by zone: the apex SOA answer
	neg    map[string][]dns.RR // by zone: the SOA of negative answers (RFC 2308 TTL)
	ns     map[string][]dns.RR // by zone: the apex NS answer; nil without `ns`
	fall   fall.F              // names the next plugin may answer
	nodes  []*node
	checks []*health.Spec    // every check the records use, children included
	cuts   map[string]*entry // delegations: names below a zone apex with NS records
	// users[usersAt[i]:usersAt[i+1]] are the ids of the nodes with a member using
	// checks[i].
	users, usersAt []int32
	// Where a health change can reach, by index in checks: the checks probing a
	// fingerprint, the checks of a name (overrides), each check's calculated parents.
	byFP, byName map[string][]int32
	calcParents  [][]int32

	regionIDs map[string]int // latency regions by name
	regions   []Region       // by id; Lat/Lon valid where hasCoords
	hasCoords []bool
	needsLoc  bool // some node ranks by the client's geoip location

	al     *planAlloc // while newPlan builds
	series []int32    // while newPlan builds: Config.memberSeries
}

// regionIDs numbers every region name the configuration knows.
func regionIDs(cfg *Config) map[string]int {
	ids := map[string]int{}
	add := func(n string) {
		if _, ok := ids[n]; !ok {
			ids[n] = len(ids)
		}
	}
	for _, rs := range cfg.Records {
		for _, m := range rs.Members {
			if rs.Policy == Latency {
				add(m.Region)
			}
		}
	}
	for n := range cfg.Regions {
		add(n)
	}
	return ids
}

func newPlan(cfg *Config) *plan {
	p := &plan{ttl: cfg.TTL, zones: cfg.Zones, names: make(map[string]*entry, len(cfg.Records)), wild: map[string]*entry{},
		exists: map[string]bool{}, soa: map[string][]dns.RR{}, neg: map[string][]dns.RR{}, ns: map[string][]dns.RR{},
		fall: cfg.Fall, regionIDs: regionIDs(cfg), al: &planAlloc{ips: map[netip.Addr]net.IP{}}, series: cfg.memberSeries}
	p.regions = make([]Region, len(p.regionIDs))
	p.hasCoords = make([]bool, len(p.regionIDs))
	for n, id := range p.regionIDs {
		r, ok := cfg.Regions[n]
		p.regions[id], p.hasCoords[id] = Region{Name: n, Lat: r.Lat, Lon: r.Lon}, ok
	}
	sets := make(map[string][]*RecordSet, len(cfg.Records))
	var qtypes types // every type the records hold
	for _, rs := range cfg.Records {
		sets[rs.Name] = append(sets[rs.Name], rs)
		for _, m := range rs.Members {
			if m.Kind != KindAlias {
				qtypes = qtypes.with(m.Type)
			}
		}
	}
	for _, z := range cfg.Zones {
		rr := soa(z, cfg.TTL, &cfg.SOA, cfg.NS)
		p.soa[z] = []dns.RR{rr}
		neg := dns.Copy(rr).(*dns.SOA)
		neg.Hdr.Ttl = min(neg.Hdr.Ttl, neg.Minttl) // RFC 2308 section 3: the negative TTL
		p.neg[z] = []dns.RR{neg}
		for _, n := range cfg.NS {
			p.ns[z] = append(p.ns[z], &dns.NS{Hdr: dns.RR_Header{Name: z, Rrtype: dns.TypeNS, Class: dns.ClassINET, Ttl: cfg.TTL}, Ns: n})
		}
	}
	memo := make(map[memoKey]*node, len(cfg.Records)) // one node per record group, shared by every entry
	done := make(map[string]bool, len(cfg.Records))
	for _, rs := range cfg.Records {
		if done[rs.Name] {
			continue // a name's second block: its entry holds every block
		}
		done[rs.Name] = true
		e := p.al.entries.one()
		e.set = rs
		for _, t := range qtypes {
			n := p.buildName(rs.Name, t, sets, memo)
			switch {
			case n == nil:
			case t == dns.TypeA:
				e.a = n
			case t == dns.TypeAAAA:
				e.aaaa = n
			case t == dns.TypeCNAME:
				e.cname = n
			default:
				e.extra().other = append(e.extra().other, n)
			}
		}
		if !e.wild() && hasAlias(e.nodes()...) {
			e.extra().aliased = new(sync.Map)
		}
		if e.wild() {
			p.wild[rs.Name[2:]] = e
		} else {
			p.names[rs.Name] = e
			if e.node(dns.TypeNS) != nil {
				if p.cuts == nil {
					p.cuts = map[string]*entry{}
				}
				p.cuts[rs.Name] = e
			}
		}
		// The owner and every ancestor below its zone exist (empty non-terminals).
		zone := plugin.Zones(cfg.Zones).Matches(strings.TrimPrefix(rs.Name, "*."))
		for n := rs.Name; ; {
			if _, owner := p.names[n]; !owner { // names answers for exact owners
				p.exists[n] = true
			}
			if n == zone || n == "." {
				break
			}
			i, end := dns.NextLabel(n, 0)
			if end {
				break
			}
			n = n[i:]
		}
	}
	seen := map[*health.Spec]bool{}
	for _, rs := range cfg.Records {
		for _, m := range rs.Members {
			if m.Check != nil {
				for _, s := range health.Flatten([]*health.Spec{m.Check}) {
					if !seen[s] {
						seen[s] = true
						p.checks = append(p.checks, s)
					}
				}
			}
		}
	}
	p.nodes = slices.Clone(p.nodes) // exactly as long as it is: the plan keeps it
	p.index()
	p.al, p.series = nil, nil // built
	return p
}

// index prepares compiles that evaluate only what a health change reaches: each
// member's check ordinal, the nodes that use each check, and each node's parents
// through aliases.
func (p *plan) index() {
	ord := make(map[*health.Spec]int32, len(p.checks))
	p.byFP, p.byName = make(map[string][]int32, len(p.checks)), make(map[string][]int32, len(p.checks))
	for i, s := range p.checks {
		ord[s] = int32(i)
		p.byFP[s.Fingerprint()] = append(p.byFP[s.Fingerprint()], int32(i))
		p.byName[s.Name] = append(p.byName[s.Name], int32(i))
	}
	p.calcParents = make([][]int32, len(p.checks))
	for i, s := range p.checks {
		for _, c := range s.Children {
			if ci, ok := ord[c]; ok && !slices.Contains(p.calcParents[ci], int32(i)) {
				p.calcParents[ci] = append(p.calcParents[ci], int32(i))
			}
		}
	}
	// Count each check's users, then fill them in, into one array of exactly
	// their number: a large configuration has a user per checked member.
	p.usersAt = make([]int32, len(p.checks)+1)
	last := make([]int32, len(p.checks)) // the last node counted for each check, +1
	for _, n := range p.nodes {
		for i := range n.members {
			mn := &n.members[i]
			mn.check = -1
			if mn.m.Check != nil {
				mn.check = ord[mn.m.Check]
				if last[mn.check] != n.id+1 { // the node's members come together
					last[mn.check] = n.id + 1
					p.usersAt[mn.check+1]++
				}
			}
			if c := mn.child; c != nil {
				if up := c.up(); len(up) == 0 || up[len(up)-1] != n {
					c.link().up = append(up, n)
				}
			}
		}
	}
	for i := range p.checks {
		p.usersAt[i+1] += p.usersAt[i]
	}
	p.users = make([]int32, p.usersAt[len(p.checks)])
	next := slices.Clone(p.usersAt[:len(p.checks)])
	clear(last)
	for _, n := range p.nodes {
		for _, mn := range n.members {
			if mn.check >= 0 && last[mn.check] != n.id+1 {
				last[mn.check] = n.id + 1
				p.users[next[mn.check]] = n.id
				next[mn.check]++
			}
		}
	}
}

// usersOf returns the ids of the nodes with a member using checks[i].
func (p *plan) usersOf(i int32) []int32 { return p.users[p.usersAt[i]:p.usersAt[i+1]] }

// hasAlias reports whether any of nodes has an alias member.
func hasAlias(nodes ...*node) bool {
	for _, n := range nodes {
		if n == nil {
			continue
		}
		for _, mn := range n.members {
			if mn.child != nil {
				return true
			}
		}
	}
	return false
}

type memoKey struct {
	set   *RecordSet
	qtype uint16
}

// buildName returns the node of the block at name that serves qtype, nil for none.
func (p *plan) buildName(name string, qtype uint16, sets map[string][]*RecordSet, memo map[memoKey]*node) *node {
	for _, rs := range sets[name] {
		if n := p.build(rs, qtype, sets, memo); n != nil {
			return n // validate saw to it that one block serves each type
		}
	}
	return nil
}

// build returns the node for rs's members of qtype, or nil when rs serves no such
// records. Each group is built once: memo holds every node built so far.
func (p *plan) build(rs *RecordSet, qtype uint16, sets map[string][]*RecordSet, memo map[memoKey]*node) *node {
	key := memoKey{rs, qtype}
	if n, ok := memo[key]; ok {
		return n
	}
	n := node{set: rs, qtype: qtype} // to the plan's array once it has members
	if rs.Policy == IPBased {
		n.link().ip = &prefixIndex[int32]{}
	}
	n.dynHealth = rs.Policy == Geolocation || rs.Policy == IPBased
	size := 0 // at most this many members: allocate them once
	for _, m := range rs.Members {
		if m.Kind == KindAlias || m.Type == qtype {
			size++
		}
	}
	if size == 0 {
		memo[key] = nil
		return nil
	}
	n.members = p.al.mnodes.take(size)[:0]
	for j, m := range rs.Members {
		var mn mnode
		switch {
		case m.Kind == KindAlias:
			if (m.Type != 0 && m.Type != qtype) || !aliasTypes[qtype] {
				continue // a typed alias answers its type only; no alias answers NS or DS
			}
			child := p.buildName(m.Target, qtype, sets, memo)
			if child == nil {
				continue
			}
			mn = mnode{m: m, child: child}
			n.dynHealth = n.dynHealth || (m.ETH && child.dynHealth)
			if m.ETH && child.dynHealth && !slices.Contains(n.healthKids(), child) {
				n.link().healthKids = append(n.healthKids(), child)
			}
		case m.Type == qtype:
			mn = mnode{m: m, leaf: newLeaf(rs.Name, m, rs.ttl(p.ttl), p.al)}
		default:
			continue
		}
		if p.series != nil {
			mn.series = p.series[rs.first+int32(j)]
		}
		i := int32(len(n.members))
		if rs.Policy == IPBased {
			if m.Default {
				n.links.ipDefault = i
			}
			for _, b := range m.CIDRs {
				n.links.ip.add(b, i)
			}
		}
		if rs.Policy == Latency {
			mn.region = int32(p.regionIDs[m.Region])
		}
		n.members = append(n.members, mn)
	}
	if len(n.members) == 0 {
		memo[key] = nil
		return nil
	}
	switch rs.Policy {
	case Geoproximity:
		n.byLoc = true
	case Geolocation: // a default alone applies to every client
		for _, mn := range n.members {
			n.byLoc = n.byLoc || !mn.m.Default
		}
	case Latency: // the client's coordinates matter only if a region has some
		for _, mn := range n.members {
			n.byLoc = n.byLoc || p.hasCoords[mn.region]
		}
	}
	p.needsLoc = p.needsLoc || n.byLoc || rs.Policy == Geolocation
	n.id = int32(len(p.nodes))
	np := p.al.nodes.one()
	*np = n
	p.nodes = append(p.nodes, np)
	memo[key] = np
	return np
}

// planAlloc is where a plan's nodes and leaves come from while it is built: arrays
// shared by many, so that each costs its size and the plan few allocations, and one
// copy of each address's bytes for every leaf that answers it (answers are
// read-only). Leaves built after the plan, the copies an aliasing name keeps, have
// none (nil) and allocate their own.
type planAlloc struct {
	entries slab[entry]
	nodes   slab[node]
	mnodes  slab[mnode]
	a       slab[dns.A]
	aaaa    slab[dns.AAAA]
	ips     map[netip.Addr]net.IP
}

// ip returns the bytes of a, shared by the plan's leaves.
func (al *planAlloc) ip(a netip.Addr) net.IP {
	if al == nil {
		return a.AsSlice()
	}
	ip, ok := al.ips[a]
	if !ok {
		ip = a.AsSlice()
		al.ips[a] = ip
	}
	return ip
}

// newA returns a zero A record, from the plan's array while it is built.
func (al *planAlloc) newA() *dns.A {
	if al == nil {
		return new(dns.A)
	}
	return al.a.one()
}

// newAAAA returns a zero AAAA record, from the plan's array while it is built.
func (al *planAlloc) newAAAA() *dns.AAAA {
	if al == nil {
		return new(dns.AAAA)
	}
	return al.aaaa.one()
}

// leafRRs appends m's RRs, named owner, to rrs.
func leafRRs(rrs []dns.RR, owner string, m *Member, ttl uint32, al *planAlloc) []dns.RR {
	hdr := func(t uint16) dns.RR_Header {
		return dns.RR_Header{Name: owner, Rrtype: t, Class: dns.ClassINET, Ttl: ttl}
	}
	switch m.Kind {
	case KindA, KindAAAA:
		for _, a := range m.Addrs {
			if m.Kind == KindA {
				rr := al.newA()
				*rr = dns.A{Hdr: hdr(dns.TypeA), A: al.ip(a)}
				rrs = append(rrs, rr)
			} else {
				rr := al.newAAAA()
				*rr = dns.AAAA{Hdr: hdr(dns.TypeAAAA), AAAA: al.ip(a)}
				rrs = append(rrs, rr)
			}
		}
	case KindCNAME:
		rrs = append(rrs, &dns.CNAME{Hdr: hdr(dns.TypeCNAME), Target: m.Target})
	case KindRR:
		for _, v := range m.RRs {
			rr := dns.Copy(v)
			*rr.Header() = hdr(v.Header().Rrtype)
			rrs = append(rrs, rr)
		}
	}
	return rrs
}

// soa builds the zone's SOA record from the `soa` property; an unset MNAME is the
// first `ns` name, else the zone itself, and an unset RNAME hostmaster.<zone>.
func soa(zone string, ttl uint32, c *SOAConfig, ns []string) dns.RR {
	mname, rname := c.Mname, c.Rname
	switch {
	case mname != "":
	case len(ns) > 0:
		mname = ns[0]
	default:
		mname = zone
	}
	if rname == "" {
		rname = dnsutil.Join("hostmaster", zone)
	}
	return &dns.SOA{
		Hdr: dns.RR_Header{Name: zone, Rrtype: dns.TypeSOA, Class: dns.ClassINET, Ttl: ttl},
		Ns:  mname, Mbox: rname, Serial: c.Serial,
		Refresh: c.Refresh, Retry: c.Retry, Expire: c.Expire, Minttl: c.Minimum,
	}
}

// mode is how a node picks among its candidates.
type mode uint8

const (
	pickFirst   mode = iota // candidates in preference order: the first
	pickWeight              // by cumulative weight
	pickUniform             // uniformly at random
	pickSet                 // multivalue: up to eight at random
)

// nodeState is a node's health-dependent selection data.
type nodeState struct {
	healthy  bool     // a healthy answer exists in this branch (static nodes; for evaluate target health)
	failOpen bool     // no member is healthy: the last resort is in force (static nodes)
	mode     mode     // how to pick among cands
	cands    []int32  // member indices a query may pick
	cum      []uint32 // pickWeight: cumulative weights of cands
	// ok is each member's health as far as it does not depend on the client: its
	// check, and for evaluate target health into a static child, the child's branch.
	// In static nodes that is all of it.
	ok []bool
}

// table is a plan evaluated against one health snapshot; immutable once stored.
type table struct {
	plan *plan
	snap *health.Snapshot
	over map[string]bool // operator overrides by check name: true healthy, false unhealthy
	// st is the nodes' states in chunks of stateChunk, by node id: a new table copies
	// only the chunks whose nodes it evaluated again and shares the rest. Nodes in the
	// same state share one nodeState (see interner); states are never written.
	st     [][]*nodeState
	judged []bool // by index in plan.checks: each check's status
	// changed is the nodes evaluated for this table and flipped the checks whose
	// status differs from the table it replaced; both nil when everything was.
	changed []*node
	flipped []*health.Spec
}

// stateChunk is how many node states a table copies when one of them changes: a flip
// copies the list of chunks and the chunks it reaches, and checks used by members all
// over the configuration reach a chunk per node, so small chunks copy least.
const stateChunk = 32

// state is node id's state in t.
func (t *table) state(id int32) *nodeState {
	u := uint32(id) // ids are not negative: unsigned division is a shift
	return t.st[u/stateChunk][u%stateChunk]
}

// healthy is a check's status in t, as the health package judges it with t's
// operator overrides.
func (t *table) healthy(s *health.Spec) bool { return t.snap.Judge(s, t.over) }

// compile evaluates every node of p against snap and the overrides, children first.
func compile(p *plan, snap *health.Snapshot, over map[string]bool) *table {
	t := &table{plan: p, snap: snap, over: over, judged: make([]bool, len(p.checks)),
		st: make([][]*nodeState, (len(p.nodes)+stateChunk-1)/stateChunk)}
	for i := range t.st {
		t.st[i] = make([]*nodeState, min(stateChunk, len(p.nodes)-i*stateChunk))
	}
	for i, s := range p.checks {
		t.judged[i] = t.healthy(s)
	}
	done := make([]bool, len(p.nodes))
	t.eval(p.nodes, func(n *node) bool {
		was := done[n.id]
		done[n.id] = true
		return !was
	})
	return t
}

// recompile is compile for a new snapshot or new overrides, given the table they
// replace: only the checks whose state or override changed are judged again (with
// their calculated parents), only the nodes with a member whose check changed status
// and the nodes that alias them (transitively) are evaluated again; the others keep
// prev's state, shared chunk by chunk. Cost: the snapshot's diff, plus what it reaches.
func recompile(prev *table, snap *health.Snapshot, over map[string]bool) *table {
	p := prev.plan
	t := &table{plan: p, snap: snap, over: over, judged: slices.Clone(prev.judged),
		st: slices.Clone(prev.st), changed: []*node{}, flipped: []*health.Spec{}}
	pending := map[*node]bool{}
	var mark func(n *node)
	mark = func(n *node) {
		if pending[n] {
			return
		}
		pending[n] = true
		t.changed = append(t.changed, n)
		for _, u := range n.up() {
			mark(u)
		}
	}
	for _, i := range touched(prev, snap, over) {
		if t.judged[i] = t.healthy(p.checks[i]); t.judged[i] != prev.judged[i] {
			t.flipped = append(t.flipped, p.checks[i])
			for _, id := range p.usersOf(i) {
				mark(p.nodes[id])
			}
		}
	}
	for _, n := range t.changed { // copy on write: prev's chunks stay as they are
		if c := n.id / stateChunk; &t.st[c][0] == &prev.st[c][0] {
			t.st[c] = slices.Clone(prev.st[c])
		}
	}
	t.eval(t.changed, func(n *node) bool {
		was := pending[n]
		delete(pending, n)
		return was
	})
	return t
}

// touched returns the checks (indexes in the plan's checks) whose status may differ
// between prev and snap with over: those whose probed state or override changed, and
// their calculated parents, transitively.
func touched(prev *table, snap *health.Snapshot, over map[string]bool) []int32 {
	p := prev.plan
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
	snap.Diff(prev.snap, func(fp string) { add(p.byFP[fp]) })
	for name, v := range over {
		if was, ok := prev.over[name]; !ok || was != v {
			add(p.byName[name])
		}
	}
	for name := range prev.over {
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
func (t *table) eval(nodes []*node, take func(*node) bool) {
	in := newInterner()
	var eval func(n *node)
	eval = func(n *node) {
		if !take(n) {
			return
		}
		for i := range n.members {
			if c := n.members[i].child; c != nil {
				eval(c)
			}
		}
		ok := in.ok[:0] // the children are done: the scratch is free
		for i := range n.members {
			mn := &n.members[i]
			h := mn.check < 0 || t.judged[mn.check] // no check: always healthy
			if mn.child != nil && mn.m.ETH && !mn.child.dynHealth {
				h = h && t.state(mn.child.id).healthy
			}
			ok = append(ok, h)
		}
		in.ok = ok
		t.st[n.id/stateChunk][n.id%stateChunk] = in.state(staticState(n, ok, in))
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
	states             map[stateKey]*nodeState
	key                []byte
	okSet              map[string][]bool
	candSet            map[string][]int32
	cumSet             map[string][]uint32
	ok, none           []bool
	healthy, all, pick []int32
	cum                []uint32
}

func newInterner() *interner {
	return &interner{states: map[stateKey]*nodeState{}, okSet: map[string][]bool{}, candSet: map[string][]int32{}, cumSet: map[string][]uint32{}}
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
func (in *interner) state(st nodeState) *nodeState {
	k := stateKey{healthy: st.healthy, failOpen: st.failOpen, mode: st.mode,
		ok: first(st.ok), cands: first(st.cands), cum: first(st.cum),
		nok: len(st.ok), ncands: len(st.cands), ncum: len(st.cum)}
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
		in.key = append(in.key, boolByte(b))
	}
	if v, ok := in.okSet[string(in.key)]; ok {
		return v
	}
	v := slices.Clip(slices.Clone(s))
	in.okSet[string(in.key)] = v
	return v
}

func boolByte(b bool) byte {
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
func staticState(n *node, ok []bool, in *interner) nodeState {
	st := nodeState{ok: in.bools(ok)}
	healthy, all := in.healthy[:0], in.all[:0]
	for i, h := range ok {
		if h {
			healthy = append(healthy, int32(i))
		}
		all = append(all, int32(i))
	}
	in.healthy, in.all = healthy, all
	st.healthy = len(healthy) > 0
	st.failOpen = !st.healthy
	if n.dynHealth {
		// The client decides what is healthy: keep ok, and for weighted groups the
		// last resort, which does not depend on health at all.
		st.healthy, st.failOpen = false, false
		if n.set.Policy == Weighted {
			in.none = slices.Grow(in.none[:0], len(ok))[:len(ok)]
			clear(in.none)
			last := staticState(&node{set: n.set, members: n.members}, in.none, in)
			st.mode, st.cands, st.cum = last.mode, last.cands, last.cum
		}
		return st
	}
	var cands []int32
	switch n.set.Policy {
	case Latency, Geolocation, Geoproximity, IPBased:
		return st // ranked per query; healthy = any member healthy
	case Simple:
		st.mode, cands = pickFirst, all[:1]
	case Failover:
		// Primary first; the secondary when the primary is unhealthy; the primary
		// again when both are (docs/routing.md#failover).
		order := in.pick[:0]
		for _, r := range []Role{Primary, Secondary} {
			for i, mn := range n.members {
				if mn.m.Role == r {
					order = append(order, int32(i))
				}
			}
		}
		in.pick = order
		st.mode, cands = pickFirst, order[:1]
		for k, i := range order {
			if ok[i] {
				cands = order[k : k+1]
				break
			}
		}
	case Weighted:
		// Healthy nonzero weights by weight; else healthy zero weights uniformly; else
		// the last resort: all nonzero by weight, or all uniformly (docs/routing.md#weighted).
		pool := healthy
		if !st.healthy {
			pool = all
		}
		nonzero := in.pick[:0]
		for _, i := range pool {
			if n.members[i].m.Weight > 0 {
				nonzero = append(nonzero, i)
			}
		}
		in.pick = nonzero
		if len(nonzero) > 0 {
			st.mode, cands = pickWeight, nonzero
			cum := in.cum[:0]
			var sum uint32
			for _, i := range nonzero {
				sum += uint32(n.members[i].m.Weight)
				cum = append(cum, sum)
			}
			in.cum = cum
			st.cum = intern(in, in.cumSet, cum)
		} else {
			st.mode, cands = pickUniform, pool
		}
	case Multivalue:
		st.mode, cands = pickSet, healthy
		if !st.healthy {
			cands = all
		}
	}
	st.cands = intern(in, in.candSet, cands)
	return st
}

// Query is one question to the resolver.
type Query struct {
	Name   string       // lower-cased, fully qualified
	Type   uint16       // the question's type
	Client netip.Prefix // ECS prefix, else the source address as a full-length prefix
	Loc    Location     // the client's location from geoip metadata, when known

	trace *view.Trace // explain: records each decision; nil on the DNS path
}

// Answer is the resolver's reply. RRs and Ns may be shared with other answers: they
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

	leafSet   *RecordSet // the record set the answer came from (metrics)
	leaf      *mnode     // and its member; nil for a multivalue set
	resortSet *RecordSet // the deepest record set that answered in its last resort, if any
	chase     bool       // step: a CNAME that chase follows
}

// Resolver answers queries from the latest compiled table. It is safe for concurrent
// use; Resolve takes no lock.
type Resolver struct {
	plan      *plan
	table     atomic.Pointer[table]
	pubMu     sync.Mutex                   // serialises Publish and SetOverrides; queries never take it
	over      map[string]bool              // guarded by pubMu
	published bool                         // a table was published, with metrics and logs; guarded by pubMu
	latency   atomic.Pointer[latencyTable] // nil: no latency_table
	cfg       *Config
	// onPublish is called after each compiled table is swapped in (not for a new
	// snapshot that changes no routing), under pubMu, with the table replaced and the
	// time compiling took: metrics and logs hang off it, outside the compile path.
	onPublish func(prev, next *table, took time.Duration)
	// Rand returns a uniform number in [0, n); nil uses math/rand/v2. Tests seed it.
	Rand func(n uint64) uint64
}

// NewResolver returns a resolver for cfg, answering as if every check were new. It
// finishes cfg first, as every way to a resolver needs (parse, or a Config built by
// hand): it numbers the answer series and lets record sets share members written
// alike. Both are idempotent, so a second resolver on one Config answers the same.
func NewResolver(cfg *Config) *Resolver {
	numberSeries(cfg)
	shareMembers(cfg)
	r := &Resolver{plan: newPlan(cfg), cfg: cfg}
	r.onPublish = r.observePublication
	switch {
	case cfg.latency != nil: // parse loaded it; the watcher replaces it from here on
		r.latency.Store(cfg.latency)
		cfg.latency = nil
	case cfg.LatencyTable != "": // a Config built without parse
		if t, err := loadLatencyTable(cfg.LatencyTable, r.plan.regionIDs, cfg.fileLimit()); err == nil {
			r.latency.Store(t)
		} else {
			log.Errorf("latency_table: %v", err)
		}
	}
	r.table.Store(compile(r.plan, nil, nil)) // no metrics or logs: setup may still fail
	return r
}

// NeedsLocation reports whether any record ranks clients by geoip location, so the
// handler reads the metadata only then.
func (r *Resolver) NeedsLocation() bool { return r.plan.needsLoc }

// Publish compiles the routing table for snap and swaps it in.
func (r *Resolver) Publish(snap *health.Snapshot) {
	r.pubMu.Lock()
	defer r.pubMu.Unlock()
	if prev := r.table.Load(); r.published && !routingChanged(prev.snap, snap) {
		// Only first results or timestamps moved (e.g. thousands of checks reporting
		// for the first time at startup): routing is the same, so keep the compiled
		// state and only take the new snapshot, which Ready reads.
		r.table.Store(&table{plan: prev.plan, snap: snap, over: prev.over, st: prev.st, judged: prev.judged,
			changed: []*node{}, flipped: []*health.Spec{}})
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
	r.publishLocked(r.table.Load().snap)
}

func (r *Resolver) publishLocked(snap *health.Snapshot) {
	first := !r.published
	r.published = true
	start := time.Now()
	prev := r.table.Load() // only publishers store, under pubMu
	t := recompile(prev, snap, r.over)
	if first {
		t.changed, t.flipped = nil, nil // the first publication reports every node and check
	}
	r.table.Store(t)
	if r.onPublish != nil {
		r.onPublish(prev, t, time.Since(start))
	}
}

func (r *Resolver) rand(n uint64) uint64 {
	if r.Rand != nil {
		return r.Rand(n)
	}
	return rand.Uint64N(n)
}

// Resolve answers q from the current table.
func (r *Resolver) Resolve(q Query) Answer {
	var ans Answer
	r.resolve(&q, &ans)
	return ans
}

// resolve answers q into ans, which is zero on entry. The DNS path keeps both on the
// handler's frame: passing them by pointer keeps each frame below it small, since
// every query runs on a goroutine whose stack starts small and is copied whenever it
// has to grow.
func (r *Resolver) resolve(q *Query, ans *Answer) {
	t := r.table.Load()
	p := t.plan
	zone := matchZone(p.zones, q.Name)
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
func (r *Resolver) apex(t *table, q *Query, zone string, ans *Answer) bool {
	p := t.plan
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
func (r *Resolver) referral(t *table, q *Query, name, zone string, ans *Answer) bool {
	p := t.plan
	var cut *entry
	for off, end := 0, false; !end && len(name)-off > len(zone); off, end = dns.NextLabel(name, off) {
		if e, ok := p.cuts[name[off:]]; ok && (off > 0 || q.Type != dns.TypeDS) {
			cut = e // keep going: the highest cut wins
		}
	}
	if cut == nil {
		return false
	}
	ans.Rcode, ans.Zone, ans.Referral = dns.RcodeSuccess, zone, true
	ans.Ns, ans.Scope = r.walk(t, cut, cut.node(dns.TypeNS), q, ans)
	for _, rr := range ans.Ns {
		if ns := rr.(*dns.NS).Ns; underZone(strings.ToLower(ns), cut.name()) {
			ans.Extra = append(ans.Extra, r.addrs(t, q, ns, zone)...)
		}
	}
	return true
}

// additional returns the A and AAAA records of the block's names that MX and SRV
// records of rrs point to, each name once, as CoreDNS's file plugin adds them.
func (r *Resolver) additional(t *table, q *Query, rrs []dns.RR, zone string) []dns.RR {
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
func (r *Resolver) addrs(t *table, q *Query, name, zone string) []dns.RR {
	e := t.plan.names[name]
	if e == nil {
		return nil
	}
	var out []dns.RR
	for _, qt := range [...]uint16{dns.TypeA, dns.TypeAAAA} {
		if n := e.node(qt); n != nil {
			var sub Answer
			rrs, _ := r.walk(t, e, n, q, &sub)
			out = append(out, rrs...)
		}
	}
	return out
}

// step answers name (q.Name or a CNAME target) from t into ans, which is zero on entry,
// without following a CNAME; ans.chase reports that the answer is a CNAME to follow.
func (r *Resolver) step(t *table, q *Query, name, zone string, ans *Answer) {
	p := t.plan
	ans.Rcode, ans.Zone = dns.RcodeSuccess, zone
	e := p.lookup(name, zone)
	var n *node
	if e != nil {
		if n = e.cname; n == nil {
			n = e.node(q.Type)
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
		ans.Ns, ans.leafSet, ans.leaf, ans.resortSet = p.neg[zone], nil, nil, nil
		return
	}
	if e.wild() {
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
func (r *Resolver) chase(t *table, q *Query, ans *Answer) {
	p := t.plan
	chain := append(make([]dns.RR, 0, len(ans.RRs)+2), ans.RRs...)
	ans.chase = false
	for range maxChase {
		target := chain[len(chain)-1].(*dns.CNAME).Target
		zone := matchZone(p.zones, target)
		if zone == "" || inChain(chain, target) {
			break
		}
		if p.cuts != nil {
			var ref Answer
			if r.referral(t, q, target, zone, &ref) {
				ans.Ns, ans.Extra = ref.Ns, ref.Extra // the CNAME, and where its target is delegated
				break
			}
		}
		var next Answer
		r.step(t, q, target, zone, &next)
		if next.Pass && p.fall.Through(target) {
			break // the next plugin's name: the client's resolver asks for it
		}
		chain = append(chain, next.RRs...)
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
func (r *Resolver) glue(t *table, q *Query, ns []dns.RR, zone string) []dns.RR {
	var out []dns.RR
	for _, rr := range ns {
		out = append(out, r.addrs(t, q, rr.(*dns.NS).Ns, zone)...)
	}
	return out
}

// matchZone returns the longest of zones that contains name ("" for none). Unlike
// plugin.Zones.Matches it does not allocate; names and zones are lower-cased FQDNs.
func matchZone(zones []string, name string) string {
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
// encloser (RFC 4592). It does not allocate.
func (p *plan) lookup(name, zone string) *entry {
	if e, ok := p.names[name]; ok {
		return e
	}
	if len(p.wild) == 0 {
		return nil
	}
	if len(name) > 2 && name[0] == '*' && name[1] == '.' {
		if e, ok := p.wild[name[2:]]; ok {
			return e // the wildcard owner itself, asked literally
		}
	}
	if p.exists[name] {
		return nil
	}
	for off, end := dns.NextLabel(name, 0); !end; off, end = dns.NextLabel(name, off) {
		parent := name[off:]
		if e, ok := p.wild[parent]; ok {
			return e
		}
		if p.names[parent] != nil || p.exists[parent] || parent == zone || len(parent) < len(zone) {
			return nil // the closest encloser has no wildcard
		}
	}
	return nil
}

// walk descends from n, a node of e, to a leaf: static nodes by their precomputed
// choice, client dependent ones by ranking for q. scope is the ECS scope of the
// choices made.
func (r *Resolver) walk(t *table, e *entry, n *node, q *Query, ans *Answer) (rrs []dns.RR, scope uint8) {
	for {
		st := t.state(n.id)
		ans.leafSet = n.set
		var i int32
		switch {
		case n.dynHealth || n.dynOrder():
			scope = max(scope, r.nodeScope(n, q))
			if i = r.pickForClient(t, n, q); i >= 0 && !r.memberOK(t, n, i, q) {
				ans.resortSet = n.set // chose an unhealthy member: no healthy one applied
			}
			if i < 0 {
				if q.trace != nil {
					r.explain(t, n, q, -1)
				}
				return nil, scope // no record applies to this client: NODATA
			}
		case st.mode == pickSet:
			if st.failOpen {
				ans.resortSet = n.set
			}
			ans.leaf = nil
			rrs := r.pickSet(t.plan, e, n, st)
			if q.trace != nil {
				r.explain(t, n, q, -1)
			}
			return rrs, scope
		default:
			if st.failOpen {
				ans.resortSet = n.set
			}
			i = r.pick(st)
		}
		if q.trace != nil {
			r.explain(t, n, q, i)
		}
		mn := &n.members[i]
		if mn.child == nil {
			ans.leaf = mn
			l := e.leaf(t.plan, n, mn)
			k := l.values()
			if k > 1 {
				return l.rotation(int(r.rand(uint64(k)))), scope
			}
			return l.one[:k:k], scope // the one value in place
		}
		n = mn.child
	}
}

func (r *Resolver) pick(st *nodeState) int32 {
	switch st.mode {
	case pickWeight:
		x := uint32(r.rand(uint64(st.cum[len(st.cum)-1])))
		lo, hi := 0, len(st.cum)-1
		for lo < hi { // first cumulative weight above x
			mid := (lo + hi) / 2
			if st.cum[mid] > x {
				hi = mid
			} else {
				lo = mid + 1
			}
		}
		return st.cands[lo]
	case pickUniform:
		return st.cands[r.rand(uint64(len(st.cands)))]
	}
	return st.cands[0]
}

// maxMultivalue is how many records a multivalue answer holds at most (docs/routing.md#multivalue).
const maxMultivalue = 8

// pickSet answers a multivalue node: every candidate when there are at most eight, else
// eight distinct ones at random, in random order. The slice is the response's own.
func (r *Resolver) pickSet(p *plan, e *entry, n *node, st *nodeState) []dns.RR {
	k := len(st.cands)
	var chosen [maxMultivalue]int32
	if k <= maxMultivalue {
		copy(chosen[:], st.cands)
	} else { // reservoir sampling: alloc-free, uniform over 8-subsets
		copy(chosen[:], st.cands[:maxMultivalue])
		for i := maxMultivalue; i < k; i++ {
			if j := r.rand(uint64(i + 1)); j < maxMultivalue {
				chosen[j] = st.cands[i]
			}
		}
		k = maxMultivalue
	}
	for i := k - 1; i > 0; i-- { // shuffle, so the order varies too
		j := r.rand(uint64(i + 1))
		chosen[i], chosen[j] = chosen[j], chosen[i]
	}
	size := 0
	for _, i := range chosen[:k] {
		size += n.members[i].values()
	}
	out := make([]dns.RR, 0, size)
	for _, i := range chosen[:k] {
		out = append(out, e.leaf(p, n, &n.members[i]).rrs()...)
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
