package fleet

import (
	"net/netip"
	"slices"
)

// CheckerAddrs returns the addresses of the members this one reaches (itself
// included) whose role probes: the addresses health checks come from when a
// member's host has one. Sorted, each once.
func (f *Fleet) CheckerAddrs() []netip.Addr {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []netip.Addr
	for name, n := range f.alive {
		probes := f.cfg.Role.Probes()
		if name != f.cfg.Name {
			m, ok := f.meta[name]
			probes = !ok || m.role.Probes()
		}
		if a, ok := netip.AddrFromSlice(n.Addr); ok && probes {
			out = append(out, a.Unmap())
		}
	}
	slices.SortFunc(out, netip.Addr.Compare)
	return slices.Compact(out)
}
