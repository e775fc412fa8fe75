package routing

import (
	"net/netip"
	"slices"
)

// PrefixIndex maps prefixes to values and finds, for a client prefix, the longest
// stored prefix that contains it and is no longer than it (docs/routing.md#ip: a /48
// block does not match a /32 query). A lookup costs one map probe per distinct
// stored length (at most 33 or 129), whatever the number of prefixes, and does not
// allocate.
type PrefixIndex[V any] struct {
	m     map[netip.Prefix]V
	lens4 []int // distinct IPv4 lengths, longest first
	lens6 []int
	t4    scopeTrie // the same prefixes as tries, for ECS scopes
	t6    scopeTrie
}

// Add stores v under p (masked); a later add of the same prefix replaces it and
// reports false.
func (x *PrefixIndex[V]) Add(p netip.Prefix, v V) bool {
	if x.m == nil {
		x.m = map[netip.Prefix]V{}
	}
	p = p.Masked()
	_, dup := x.m[p]
	x.m[p] = v
	lens, t := &x.lens6, &x.t6
	if p.Addr().Is4() {
		lens, t = &x.lens4, &x.t4
	}
	if !dup {
		t.insert(p)
	}
	if !slices.Contains(*lens, p.Bits()) {
		*lens = append(*lens, p.Bits())
		slices.SortFunc(*lens, func(a, b int) int { return b - a })
	}
	return !dup
}

// Lookup returns the value of the longest stored prefix containing client.
func (x *PrefixIndex[V]) Lookup(client netip.Prefix) (v V, ok bool) {
	if len(x.m) == 0 || !client.IsValid() {
		return v, false
	}
	a := client.Addr()
	lens := x.lens6
	if a.Is4() {
		lens = x.lens4
	}
	for _, l := range lens {
		if l > client.Bits() {
			continue
		}
		p, err := a.Prefix(l)
		if err != nil {
			continue
		}
		if v, ok = x.m[p]; ok {
			return v, true
		}
	}
	return v, false
}

// Scope returns the ECS scope of a lookup for client: the prefix length within
// which every address finds the same stored prefix (see scopeTrie.scope).
func (x *PrefixIndex[V]) Scope(client netip.Prefix) uint8 {
	if !client.IsValid() {
		return 0
	}
	if client.Addr().Is4() {
		return x.t4.scope(client)
	}
	return x.t6.scope(client)
}

// Len returns the number of stored prefixes.
func (x *PrefixIndex[V]) Len() int { return len(x.m) }
