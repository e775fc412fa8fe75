package routing

import (
	"net"
	"net/netip"
	"slices"
	"strings"
	"sync"

	"github.com/coredns/coredns/plugin"
	"github.com/coredns/coredns/plugin/pkg/dnsutil"
	"github.com/coredns/coredns/plugin/pkg/fall"
	"github.com/miekg/dns"

	"github.com/healthroute/healthroute/health"
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

// Node is one record group: a record set's members of one type.
//
// Fields are ordered by size, so that the struct packs without padding: a large
// configuration holds one per record group. What only some groups have is behind
// links, which most leave nil.
type Node struct {
	Set     *PlanSet
	Members []MemberNode
	links   *nodeLinks // aliases to or from this group, the ip index; nil for none
	ID      int32      // index into table.st
	QType   uint16

	// DynHealth: whether a healthy answer exists depends on the client (geolocation
	// and ip groups, and groups that evaluate target health into them;
	// docs/routing.md#evaluate-target-health). With dynOrder, the node is client
	// dependent; static nodes are decided entirely at compile.
	DynHealth bool
	byLoc     bool // the client's geoip location can change the choice
}

// PlanSet is a record set as the plan holds it: the configuration's record set, read
// only, and what the plan numbered for it, the answer series its answers count into
// (numberSeries) and the zone it is in. One per record set, shared by its nodes.
type PlanSet struct {
	*RecordSet
	first  int32  // where its members' answers_total series start in plan.memberSeries
	Multi  int32  // a multivalue set's answers_total series: its members never answer alone
	Resort int32  // the name's last_resort_answers_total series
	Zone   uint16 // the zone the name is in: its index in the plan's zones
	policy Policy // the record set's, where a query reads it without a second pointer to follow
}

// dynOrder reports whether n's policy ranks members by the client (latency,
// geolocation, geoproximity, ip).
func (n *Node) dynOrder() bool {
	switch n.Set.policy {
	case PolicyLatency, PolicyGeolocation, PolicyGeoproximity, PolicyIPBased, PolicyAZAffinity:
		return true
	}
	return false
}

// nodeLinks is what a node with aliases or an ip index has beyond the others.
type nodeLinks struct {
	healthKids []*Node             // evaluate target health into client-dependent health: their scope counts
	up         []*Node             // the nodes with a member aliasing this one
	ip         *PrefixIndex[int32] // ip: block -> member index; nil for other policies
	ipDefault  int32               // ip: the default member, -1 for none
}

// link returns n's links, creating them.
func (n *Node) link() *nodeLinks {
	if n.links == nil {
		n.links = &nodeLinks{ipDefault: -1}
	}
	return n.links
}

// healthKids returns the client-dependent nodes that n's members evaluate the
// target health of.
func (n *Node) healthKids() []*Node {
	if n.links == nil {
		return nil
	}
	return n.links.healthKids
}

// up returns the nodes with a member aliasing n.
func (n *Node) up() []*Node {
	if n.links == nil {
		return nil
	}
	return n.links.up
}

// MemberNode is a member of a node: a leaf with prebuilt RRs, or an alias to a child node.
type MemberNode struct {
	Member *Member
	leaf
	Child  *Node // alias target
	region int32 // latency: the plan's region id
	check  int32 // the member's check: its index in plan.checks, -1 for none
	Series int32 // the member's answers_total series (plan.memberSeries)
}

// leaf is a member's prebuilt answer: its RRs (owner = the record set's name). A
// single value, the common case, sits in the leaf itself, and answers slice it where
// it is; several sit in a ring the leaf points to. Never mutated; an alias member's
// leaf is empty. A large configuration holds one per member: one field, not two.
type leaf struct {
	One [1]dns.RR // the value, or a *ring for several
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
		return leaf{One: [1]dns.RR{rrs[0]}}
	}
	r := &ring{rrs: append(make([]dns.RR, 0, 2*len(rrs)-1), rrs...)}
	r.rrs = append(r.rrs, rrs[:len(rrs)-1]...)
	return leaf{One: [1]dns.RR{r}}
}

// values is how many RRs the leaf answers.
func (l *leaf) values() int {
	if r, ok := l.One[0].(*ring); ok {
		return (len(r.rrs) + 1) / 2
	}
	if l.One[0] != nil {
		return 1
	}
	return 0
}

// RRs returns the leaf's RRs in their written order, capped.
func (l *leaf) RRs() []dns.RR { return l.rotation(0) }

// rotation returns the RRs starting at the i-th value, capped.
func (l *leaf) rotation(i int) []dns.RR {
	if r, ok := l.One[0].(*ring); ok {
		k := (len(r.rrs) + 1) / 2
		return r.rrs[i : i+k : i+k]
	}
	if l.One[0] != nil {
		return l.One[:]
	}
	return nil
}

// Entry is what a name answers: one node per type it serves, from the name's one
// record block or its blocks of one type each.
//
// A large configuration holds one per name: what only some names have is behind more,
// which most leave nil.
type Entry struct {
	A, aaaa, cname *Node
	more           *entryMore
	set            *RecordSet // the name's first block, whose Name is the owner (see name)
}

// entryMore is what a name with other types or aliases has beyond the others.
type entryMore struct {
	other   []*Node   // every other type
	aliased *sync.Map // *MemberNode -> *leaf: leaves of other names, named for this one; nil without aliases
}

// name is e's owner; "*.parent" for a wildcard, whose answers carry the query name.
func (e *Entry) name() string { return e.set.Name }

// wild reports whether e's owner is a wildcard.
func (e *Entry) wild() bool { return strings.HasPrefix(e.name(), "*.") }

// extra returns e's more, creating it.
func (e *Entry) extra() *entryMore {
	if e.more == nil {
		e.more = &entryMore{}
	}
	return e.more
}

// Node returns the node that answers qtype at e, nil for none.
func (e *Entry) Node(qtype uint16) *Node {
	switch qtype {
	case dns.TypeA:
		return e.A
	case dns.TypeAAAA:
		return e.aaaa
	case dns.TypeCNAME:
		return e.cname
	}
	if e.more != nil {
		for _, n := range e.more.other {
			if n.QType == qtype {
				return n
			}
		}
	}
	return nil
}

// nodes returns every node of e.
func (e *Entry) nodes() []*Node {
	var out, other []*Node
	if e.more != nil {
		other = e.more.other
	}
	for _, n := range append([]*Node{e.A, e.aaaa, e.cname}, other...) {
		if n != nil {
			out = append(out, n)
		}
	}
	return out
}

// leaf returns n's member mn as e answers it: the member's own leaf when e owns n
// (see owns); else a copy named for e, built on first use and kept, so queries after
// the first allocate nothing and memory grows only with the (name, leaf) pairs
// actually answered.
func (e *Entry) leaf(p *Plan, n *Node, mn *MemberNode) *leaf {
	return e.leafOwned(p, n, mn, e.owns(n))
}

// owns reports whether n's members answer e as they are: n belongs to e's record
// set, or e is a wildcard, whose answers are renamed anyway. The pointers are
// compared first: the common case is decided without reading either record set, a
// cache miss per query at 10,000 names asked at random (BenchmarkShapes).
func (e *Entry) owns(n *Node) bool {
	return n.Set.RecordSet == e.set || n.Set.Name == e.name() || e.wild()
}

// leafOwned is leaf with e.owns(n) known: a multivalue answer asks it once for all
// its members.
func (e *Entry) leafOwned(p *Plan, n *Node, mn *MemberNode, owned bool) *leaf {
	if owned {
		return &mn.leaf
	}
	aliased := e.more.aliased // e reaches n through an alias
	if l, ok := aliased.Load(mn); ok {
		return l.(*leaf)
	}
	l := newLeaf(e.name(), mn.Member, n.Set.AnswerTTL(p.ttl), nil) // the target's TTL, as Route 53 answers aliases
	v, _ := aliased.LoadOrStore(mn, &l)
	return v.(*leaf)
}

// Plan is the health-independent part of the routing tree.
type Plan struct {
	ttl    uint32
	zones  []string
	Names  map[string]*Entry   // exact owners
	wild   map[string]*Entry   // wildcard owners, keyed by the parent of "*."
	exists map[string]bool     // wildcard owners and empty non-terminals: with names, every name that exists
	soa    map[string][]dns.RR // by zone: the apex SOA answer
	neg    map[string][]dns.RR // by zone: the SOA of negative answers (RFC 2308 TTL)
	ns     map[string][]dns.RR // by zone: the apex NS answer; nil without `ns`
	fall   fall.F              // names the next plugin may answer
	Nodes  []*Node
	Checks []*health.Spec    // every check the records use, children included
	cuts   map[string]*Entry // delegations: names below a zone apex with NS records
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
	needsLoc  bool    // some node ranks by the client's geoip location
	az        *azPlan // the location lines; nil for none

	// The answer series (numberSeries): every record set, in Corefile order; each
	// member's answers_total series, the sets' members in order, from PlanSet.first on
	// (members are shared by record sets, shareMembers, so the series is not theirs);
	// how many series of each kind there are.
	sets         []PlanSet
	MemberSeries []int32
	SeriesCount  [2]int32

	Al    *planAlloc              // while newPlan builds
	setOf map[*RecordSet]*PlanSet // while newPlan builds: sets by record set
}

// RegionIDs numbers every region name the configuration knows.
func RegionIDs(cfg *Config) map[string]int {
	ids := map[string]int{}
	add := func(n string) {
		if _, ok := ids[n]; !ok {
			ids[n] = len(ids)
		}
	}
	for _, rs := range cfg.Records {
		for _, m := range rs.Members {
			if rs.Policy == PolicyLatency {
				add(m.Region)
			}
		}
	}
	for n := range cfg.Regions {
		add(n)
	}
	return ids
}

func newPlan(cfg *Config) *Plan {
	p := &Plan{ttl: cfg.TTL, zones: cfg.Zones, Names: make(map[string]*Entry, len(cfg.Records)), wild: map[string]*Entry{},
		exists: map[string]bool{}, soa: map[string][]dns.RR{}, neg: map[string][]dns.RR{}, ns: map[string][]dns.RR{},
		fall: cfg.Fall, regionIDs: RegionIDs(cfg), Al: &planAlloc{ips: map[netip.Addr]net.IP{}}}
	p.az = newAZPlan(cfg)
	p.regions = make([]Region, len(p.regionIDs))
	p.hasCoords = make([]bool, len(p.regionIDs))
	for n, id := range p.regionIDs {
		r, ok := cfg.Regions[n]
		p.regions[id], p.hasCoords[id] = Region{Name: n, Lat: r.Lat, Lon: r.Lon}, ok
	}
	p.numberSeries(cfg)
	p.buildApex(cfg)
	p.buildEntries(cfg)
	p.collectChecks(cfg)
	p.Nodes = slices.Clone(p.Nodes) // exactly as long as it is: the plan keeps it
	p.index()
	p.Al, p.setOf = nil, nil // built
	return p
}

// buildApex builds each zone's SOA, its negative-answer copy and its NS records.
func (p *Plan) buildApex(cfg *Config) {
	for _, z := range cfg.Zones {
		rr := SOA(z, cfg.TTL, &cfg.SOA, cfg.NS)
		p.soa[z] = []dns.RR{rr}
		neg := dns.Copy(rr).(*dns.SOA)
		neg.Hdr.Ttl = min(neg.Hdr.Ttl, neg.Minttl) // RFC 2308 section 3: the negative TTL
		p.neg[z] = []dns.RR{neg}
		for _, n := range cfg.NS {
			p.ns[z] = append(p.ns[z], &dns.NS{Hdr: dns.RR_Header{Name: z, Rrtype: dns.TypeNS, Class: dns.ClassINET, Ttl: cfg.TTL}, Ns: n})
		}
	}
}

// buildEntries builds one entry per owner name, holding a node per type its record sets
// (and their aliases) answer, and marks the names that exist.
func (p *Plan) buildEntries(cfg *Config) {
	sets := make(map[string][]*RecordSet, len(cfg.Records))
	var qtypes Types // every type the records hold
	for _, rs := range cfg.Records {
		sets[rs.Name] = append(sets[rs.Name], rs)
		for _, m := range rs.Members {
			if m.Kind != KindAlias {
				qtypes = qtypes.With(m.Type)
			}
		}
	}
	memo := make(map[memoKey]*Node, len(cfg.Records)) // one node per record group, shared by every entry
	done := make(map[string]bool, len(cfg.Records))
	for _, rs := range cfg.Records {
		if done[rs.Name] {
			continue // a name's second block: its entry holds every block
		}
		done[rs.Name] = true
		e := p.Al.entries.one()
		e.set = rs
		for _, t := range qtypes {
			n := p.buildName(rs.Name, t, sets, memo)
			switch {
			case n == nil:
			case t == dns.TypeA:
				e.A = n
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
		p.placeEntry(e, cfg.Zones)
	}
}

// placeEntry files e under its name (or its wildcard's parent) and marks its owner and
// every ancestor below its zone as existing (empty non-terminals).
func (p *Plan) placeEntry(e *Entry, zones []string) {
	name := e.set.Name
	if e.wild() {
		p.wild[name[2:]] = e
	} else {
		p.Names[name] = e
		if e.Node(dns.TypeNS) != nil {
			if p.cuts == nil {
				p.cuts = map[string]*Entry{}
			}
			p.cuts[name] = e
		}
	}
	zone := plugin.Zones(zones).Matches(strings.TrimPrefix(name, "*."))
	for n := name; ; {
		if _, owner := p.Names[n]; !owner { // names answers for exact owners
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

// collectChecks lists every check the records use, calculated checks' children
// included, each once.
func (p *Plan) collectChecks(cfg *Config) {
	seen := map[*health.Spec]bool{}
	for _, rs := range cfg.Records {
		for _, m := range rs.Members {
			if m.Check != nil {
				for _, s := range health.Flatten([]*health.Spec{m.Check}) {
					if !seen[s] {
						seen[s] = true
						p.Checks = append(p.Checks, s)
					}
				}
			}
		}
	}
}

// index prepares compiles that evaluate only what a health change reaches: each
// member's check ordinal, the nodes that use each check, and each node's parents
// through aliases.
func (p *Plan) index() {
	ord := make(map[*health.Spec]int32, len(p.Checks))
	p.byFP, p.byName = make(map[string][]int32, len(p.Checks)), make(map[string][]int32, len(p.Checks))
	for i, s := range p.Checks {
		ord[s] = int32(i)
		p.byFP[s.Fingerprint()] = append(p.byFP[s.Fingerprint()], int32(i))
		p.byName[s.Name] = append(p.byName[s.Name], int32(i))
	}
	p.calcParents = make([][]int32, len(p.Checks))
	for i, s := range p.Checks {
		for _, c := range s.Children {
			if ci, ok := ord[c]; ok && !slices.Contains(p.calcParents[ci], int32(i)) {
				p.calcParents[ci] = append(p.calcParents[ci], int32(i))
			}
		}
	}
	// Count each check's users, then fill them in, into one array of exactly
	// their number: a large configuration has a user per checked member.
	p.usersAt = make([]int32, len(p.Checks)+1)
	last := make([]int32, len(p.Checks)) // the last node counted for each check, +1
	for _, n := range p.Nodes {
		for i := range n.Members {
			mn := &n.Members[i]
			mn.check = -1
			if mn.Member.Check != nil {
				mn.check = ord[mn.Member.Check]
				if last[mn.check] != n.ID+1 { // the node's members come together
					last[mn.check] = n.ID + 1
					p.usersAt[mn.check+1]++
				}
			}
			if c := mn.Child; c != nil {
				if up := c.up(); len(up) == 0 || up[len(up)-1] != n {
					c.link().up = append(up, n)
				}
			}
		}
	}
	for i := range p.Checks {
		p.usersAt[i+1] += p.usersAt[i]
	}
	p.users = make([]int32, p.usersAt[len(p.Checks)])
	next := slices.Clone(p.usersAt[:len(p.Checks)])
	clear(last)
	for _, n := range p.Nodes {
		for _, mn := range n.Members {
			if mn.check >= 0 && last[mn.check] != n.ID+1 {
				last[mn.check] = n.ID + 1
				p.users[next[mn.check]] = n.ID
				next[mn.check]++
			}
		}
	}
}

// usersOf returns the ids of the nodes with a member using checks[i].
func (p *Plan) usersOf(i int32) []int32 { return p.users[p.usersAt[i]:p.usersAt[i+1]] }

// hasAlias reports whether any of nodes has an alias member.
func hasAlias(nodes ...*Node) bool {
	for _, n := range nodes {
		if n == nil {
			continue
		}
		for _, mn := range n.Members {
			if mn.Child != nil {
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
func (p *Plan) buildName(name string, qtype uint16, sets map[string][]*RecordSet, memo map[memoKey]*Node) *Node {
	for _, rs := range sets[name] {
		if n := p.build(rs, qtype, sets, memo); n != nil {
			return n // validate saw to it that one block serves each type
		}
	}
	return nil
}

// build returns the node for rs's members of qtype, or nil when rs serves no such
// records. Each group is built once: memo holds every node built so far.
func (p *Plan) build(rs *RecordSet, qtype uint16, sets map[string][]*RecordSet, memo map[memoKey]*Node) *Node {
	key := memoKey{rs, qtype}
	if n, ok := memo[key]; ok {
		return n
	}
	n := Node{Set: p.setOf[rs], QType: qtype} // to the plan's array once it has members
	if rs.Policy == PolicyIPBased {
		n.link().ip = &PrefixIndex[int32]{}
	}
	n.DynHealth = rs.Policy == PolicyGeolocation || rs.Policy == PolicyIPBased || rs.Policy == PolicyAZAffinity
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
	n.Members = p.Al.mnodes.take(size)[:0]
	p.buildMembers(&n, rs, qtype, sets, memo)
	if len(n.Members) == 0 {
		memo[key] = nil
		return nil
	}
	switch rs.Policy {
	case PolicyGeoproximity:
		n.byLoc = true
	case PolicyGeolocation: // a default alone applies to every client
		for _, mn := range n.Members {
			n.byLoc = n.byLoc || !mn.Member.Default
		}
	case PolicyLatency: // the client's coordinates matter only if a region has some
		for _, mn := range n.Members {
			n.byLoc = n.byLoc || p.hasCoords[mn.region]
		}
	}
	p.needsLoc = p.needsLoc || n.byLoc || rs.Policy == PolicyGeolocation
	n.ID = int32(len(p.Nodes))
	np := p.Al.nodes.one()
	*np = n
	p.Nodes = append(p.Nodes, np)
	memo[key] = np
	return np
}

// buildMembers adds rs's members that answer qtype to n: leaves for its own values,
// and for each alias the node of its target, built first.
func (p *Plan) buildMembers(n *Node, rs *RecordSet, qtype uint16, sets map[string][]*RecordSet, memo map[memoKey]*Node) {
	for j, m := range rs.Members {
		var mn MemberNode
		switch {
		case m.Kind == KindAlias:
			if (m.Type != 0 && m.Type != qtype) || !AliasTypes[qtype] {
				continue // a typed alias answers its type only; no alias answers NS or DS
			}
			child := p.buildName(m.Target, qtype, sets, memo)
			if child == nil {
				continue
			}
			mn = MemberNode{Member: m, Child: child}
			n.DynHealth = n.DynHealth || (m.ETH && child.DynHealth)
			if m.ETH && child.DynHealth && !slices.Contains(n.healthKids(), child) {
				n.link().healthKids = append(n.healthKids(), child)
			}
		case m.Type == qtype:
			mn = MemberNode{Member: m, leaf: newLeaf(rs.Name, m, rs.AnswerTTL(p.ttl), p.Al)}
		default:
			continue
		}
		mn.Series = p.MemberSeries[n.Set.first+int32(j)]
		i := int32(len(n.Members))
		if rs.Policy == PolicyIPBased {
			if m.Default {
				n.links.ipDefault = i
			}
			for _, b := range m.CIDRs {
				n.links.ip.Add(b, i)
			}
		}
		if rs.Policy == PolicyLatency {
			mn.region = int32(p.regionIDs[m.Region])
		}
		n.Members = append(n.Members, mn)
	}
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

// SOA builds the zone's SOA record from the `soa` property; an unset MNAME is the
// first `ns` name, else the zone itself, and an unset RNAME hostmaster.<zone>.
func SOA(zone string, ttl uint32, c *SOAConfig, ns []string) dns.RR {
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
