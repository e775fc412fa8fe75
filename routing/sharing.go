package routing

import (
	"net"
	"net/netip"
	"slices"

	"github.com/miekg/dns"

	"github.com/healthroute/healthroute/health"
)

// memberKey is what makes two address members alike: the same addresses (parse
// shares one Ref for each list of them), check, set identifier, weight, role and
// default flag. Members with a target name or a place are not shared.
type memberKey struct {
	target *Ref
	check  *health.Spec
	id     string
	typ    uint16
	kind   Kind
	eth    bool
	weight uint8
	role   Role
	deflt  bool
}

// shareMembers makes record sets whose members are written alike share one Member
// each: a large configuration of names that point at the same few endpoints (a name
// per customer, say, each weighted over the same three pools) then holds those
// members once, not once per name. Members are read-only once validated, and none is
// told apart by its address: the answer series a member counts into are numbered by
// record set (plan.memberSeries). Record sets whose lists of members are then alike share
// the list too.
func shareMembers(cfg *Config) {
	seen := map[memberKey]*Member{}
	lists := map[*Member][]*Member{} // the first list to start with each member
	for _, rs := range cfg.Records {
		for j, m := range rs.Members {
			if m.Place != nil || (m.Kind != KindA && m.Kind != KindAAAA) {
				continue
			}
			k := memberKey{target: m.Ref, check: m.Check, id: m.ID,
				typ: m.Type, kind: m.Kind, eth: m.ETH, weight: m.Weight, role: m.Role, deflt: m.Default}
			if s, ok := seen[k]; ok {
				rs.Members[j] = s
			} else {
				seen[k] = m
			}
		}
		if len(rs.Members) == 0 {
			continue // a Config built by hand may hold an empty set; parse refuses one
		}
		switch l, ok := lists[rs.Members[0]]; {
		case !ok:
			lists[rs.Members[0]] = rs.Members
		case slices.Equal(l, rs.Members):
			rs.Members = l
		}
	}
}

// slab hands out values of T carved from arrays it allocates a chunk at a time, for
// the structs a large configuration holds one or a few of per name: each value then
// costs its size, not the allocator's next size class, and a chunk is one allocation
// instead of hundreds. The chunks grow with use, so a small configuration wastes at
// most a few values. A chunk lives as long as any value carved from it: use it for
// values that live and die together (one parse, one plan). Not safe for concurrent
// use.
type slab[T any] struct {
	free []T // the rest of the current chunk
	size int // the length of the next chunk
}

// slabMin and slabMax bound a chunk's length: the first is small, each doubles the
// last, up to slabMax values.
const slabMin, slabMax = 8, 1024

// one returns a zero value of T.
func (s *slab[T]) one() *T {
	return &s.take(1)[0]
}

// take returns k zero values of T, in one array whose capacity is k: appending to it
// copies rather than runs into its neighbours.
func (s *slab[T]) take(k int) []T {
	if k > len(s.free) {
		if k > slabMax/8 {
			return make([]T, k) // its own array: a chunk would waste too much of itself
		}
		s.size = min(max(2*s.size, slabMin, k), slabMax)
		s.free = make([]T, s.size) // the last chunk's rest, under k values, is wasted
	}
	v := s.free[:k:k]
	s.free = s.free[k:]
	return v
}

// planAlloc is where a plan's nodes and leaves come from while it is built: arrays
// shared by many, so that each costs its size and the plan few allocations, and one
// copy of each address's bytes for every leaf that answers it (answers are
// read-only). Leaves built after the plan, the copies an aliasing name keeps, have
// none (nil) and allocate their own.
type planAlloc struct {
	entries slab[Entry]
	nodes   slab[Node]
	mnodes  slab[MemberNode]
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
