package healthroute

import (
	"net/netip"

	"github.com/coredns/coredns/plugin"

	"github.com/healthroute/healthroute/operator"
	"github.com/healthroute/healthroute/r53api"
	"github.com/healthroute/healthroute/view"
)

// apiLookups are what the Route 53 API reads of the running process: the fleet's
// checkers (GetCheckerIpRanges) and explain (TestDNSAnswer).
func (r *registry) apiLookups() r53api.Lookups {
	return r53api.Lookups{CheckerIPs: r.checkerIPs, Explain: r.explainForAPI}
}

// checkerIPs returns the addresses of the fleet's probing members, none without a fleet.
func (r *registry) checkerIPs() []netip.Prefix {
	fl := r.fleet()
	if fl == nil {
		return nil
	}
	var out []netip.Prefix
	for _, a := range fl.CheckerAddrs() {
		out = append(out, netip.PrefixFrom(a, a.BitLen()))
	}
	return out
}

// explainForAPI explains q with the running block of the longest zone holding
// its name (the newest of a reload's two), as CoreDNS would route the query.
func (r *registry) explainForAPI(q view.Question) (view.Explanation, bool) {
	var block operator.Block
	best := ""
	for _, b := range r.op.Blocks() {
		if z := plugin.Zones(b.Zones()).Matches(q.Name); z != "" && len(z) >= len(best) {
			block, best = b, z
		}
	}
	if block == nil {
		return view.Explanation{}, false
	}
	return block.Explain(q), true
}
