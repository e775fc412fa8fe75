// Package healthroute is a CoreDNS plugin that answers from record sets with Route 53
// routing policies, steered by background health checks.
package healthroute

import (
	"context"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coredns/coredns/plugin"
	"github.com/coredns/coredns/plugin/metadata"
	"github.com/coredns/coredns/plugin/metrics"
	"github.com/miekg/dns"

	"github.com/healthroute/healthroute/health"
	"github.com/healthroute/healthroute/notify"
	"github.com/healthroute/healthroute/operator"
	"github.com/healthroute/healthroute/routing"
	"github.com/healthroute/healthroute/view"
)

// HealthRoute is the plugin handler of one server block.
type HealthRoute struct {
	Next plugin.Handler

	cfg            *blockConfig
	resolver       *routing.Resolver
	reg            *registry
	stop           func()                          // ends the snapshot subscription
	unwatch        func()                          // stops the latency_table and route53 watchers
	serverCounters sync.Map                        // server -> *queryCounters
	lastCounters   atomic.Pointer[queryCounters]   // the last server's, for the common one-server case
	servers        []string                        // the server addresses the block listens on (metrics' server label)
	sched          *health.Scheduler               // set by OnStartup, for the publish hook (which must not take the registry's lock)
	notifier       atomic.Pointer[notify.Notifier] // the block's webhook, nil without one
	// relay, nil outside a reload, sends the block's queries to a newer handler of
	// the same block once that one answers, so that a reload's answers never go
	// back a generation (see relay in reload.go).
	relay atomic.Pointer[relay]
	preds []*HealthRoute // the running handlers this reload's handler supersedes; guarded by reg.mu
}

// newHealthRoute returns the handler for cfg, sharing the process's checks, fleet member and
// API listeners with the other blocks; it starts nothing until OnStartup.
func newHealthRoute(cfg *blockConfig) *HealthRoute { return newHandler(cfg, shared) }

// newHandler is newHealthRoute with its own registry, for tests.
func newHandler(cfg *blockConfig, reg *registry) *HealthRoute {
	h := &HealthRoute{cfg: cfg, resolver: newResolver(cfg), reg: reg}
	observe := h.resolver.OnPublish
	h.resolver.OnPublish = func(prev, next *routing.Table, took time.Duration) {
		observe(prev, next, took)
		h.notifyPublication(prev, next)
	}
	shared.parsed.Store(true)
	return h
}

// Name implements plugin.Handler.
func (h *HealthRoute) Name() string { return pluginName }

// ServeDNS implements plugin.Handler. CoreDNS answers each UDP query on a goroutine
// whose stack starts small and is copied to one twice the size whenever it runs out,
// so the query path keeps its frames small: the answer is built in reply, whose frame
// is gone before the reply is packed and written, the deepest part of the query.
//
// During a reload the old and the new instance serve the same sockets at once;
// once the new instance's handler of this block has answered, this one hands
// every query to it (h.relay), plugins after it included, so that a client never
// gets the new generation's answer and then the old one's again.
func (h *HealthRoute) ServeDNS(ctx context.Context, w dns.ResponseWriter, r *dns.Msg) (int, error) {
	if rl := h.relay.Load(); rl != nil { // one atomic load outside a reload
		h = h.answerer(rl)
	}
	m, next, rcode := h.reply(ctx, w, r)
	switch {
	case m != nil:
		w.WriteMsg(m)
		return dns.RcodeSuccess, nil
	case next != nil:
		return plugin.NextOrFailure(h.Name(), h.Next, ctx, next, r)
	}
	return rcode, nil
}

// reply answers r: the message to write, else the writer to pass the query to the
// next plugin with, else the rcode to return without writing.
//
//go:noinline
func (h *HealthRoute) reply(ctx context.Context, w dns.ResponseWriter, r *dns.Msg) (*dns.Msg, dns.ResponseWriter, int) {
	name, qt := questionOf(r)
	zone := routing.MatchZone(h.cfg.Zones, name)
	if zone == "" {
		return nil, w, 0
	}
	// Only queries are ours: NOTIFY, UPDATE and zone transfers go to the next plugin
	// (a transfer plugin, say); without one the server answers as stock CoreDNS does.
	if r.Opcode != dns.OpcodeQuery || qt == dns.TypeAXFR || qt == dns.TypeIXFR {
		switch {
		case h.Next != nil:
			return nil, w, 0
		case r.Opcode != dns.OpcodeQuery:
			return nil, nil, dns.RcodeNotImplemented
		}
		return nil, nil, dns.RcodeRefused
	}
	cl, ecs, ok := client(w, r)
	if !ok {
		return nil, nil, dns.RcodeFormatError // nothing written: the server answers FORMERR
	}
	var q routing.Query // field by field: a literal would take a second copy on the stack
	q.Name, q.Type, q.Client = name, qt, cl
	if h.resolver.NeedsLocation() {
		location(ctx, &q.Loc)
	}
	var ans routing.Answer
	h.resolver.ResolveInto(&q, &ans) // lock-free
	return h.message(ctx, w, r, &q, &ans, ecs)
}

// message turns ans, the answer to q, into reply's results. Its frame (the reply's
// header, the fallthrough check, the metrics) is not on the stack while resolving.
//
//go:noinline
func (h *HealthRoute) message(ctx context.Context, w dns.ResponseWriter, r *dns.Msg, q *routing.Query, ans *routing.Answer, ecs *dns.EDNS0_SUBNET) (*dns.Msg, dns.ResponseWriter, int) {
	if ans.Pass && h.cfg.Fall.Through(q.Name) {
		// Overlay: only the names and types of the block's records are its own;
		// the next plugin serves the rest of the zone, its apex included.
		if ans.Rcode == dns.RcodeSuccess {
			w = existsWriter{w} // the name is the block's: never NXDOMAIN
		}
		return nil, w, 0
	}
	if ans.Out == nil { // else allocated with the answer built for this query
		ans.Out = new(routing.ReplyMsg)
	}
	// The message and its question in one allocation, with the room when built per query.
	m := ans.Out.SetReply(r)
	m.Authoritative, m.Rcode, m.Answer, m.Ns, m.Extra = !ans.Referral, ans.Rcode, ans.RRs, ans.Ns, ans.Extra // shared, read-only
	if ecs != nil {
		echoECS(m, r, ecs, q.Client, ans.Scope)
	}
	h.count(metrics.WithServer(ctx), ans) // before the client has the answer, so a scrape after it sees the count
	return m, nil, 0
}

// questionOf returns the question's name and type as request.Request's Name and QType
// do (".", 0 without a question), without that struct on the query's stack. A name
// of lower-case letters, digits, hyphens, underscores and dots, nearly every name
// asked, is its own presentation and lower-cased form: it is used as it is, after one
// pass over it, where escaping and lower-casing would take two more.
func questionOf(r *dns.Msg) (string, uint16) {
	if len(r.Question) == 0 {
		return ".", 0
	}
	name := r.Question[0].Name
	if !plainName(name) {
		name = strings.ToLower(dns.Name(name).String())
	}
	return name, r.Question[0].Qtype
}

// plainBytes are the bytes that need neither escaping nor lower-casing in a name.
var plainBytes = func() (t [256]bool) {
	for c := range 256 {
		t[c] = 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.'
	}
	return t
}()

// plainName reports whether every byte of name is plain (plainBytes).
func plainName(name string) bool {
	for i := 0; i < len(name); i++ {
		if !plainBytes[name[i]] {
			return false
		}
	}
	return true
}

// existsWriter passes the next plugin's answer for a name the block has records at (or
// below) on, with NXDOMAIN turned into NODATA: a zone file that lacks the name must not
// deny the block's own records to resolvers that trust NXDOMAIN for the whole name
// (RFC 8020).
type existsWriter struct{ dns.ResponseWriter }

func (w existsWriter) WriteMsg(m *dns.Msg) error {
	if m.Rcode == dns.RcodeNameError {
		c := *m
		c.Rcode = dns.RcodeSuccess
		m = &c
	}
	return w.ResponseWriter.WriteMsg(m)
}

// CacheBypassZones tells CoreDNS's cache plugin in the same server block to pass
// queries for the block's zones through: answers depend on the client and on health,
// and the cache keys by name and type only.
func (h *HealthRoute) CacheBypassZones() []string { return h.cfg.Zones }

// client returns where the query comes from: the EDNS Client Subnet prefix when the
// query has one (docs/routing.md#ecs), else the source address. ok is false for an ECS
// option that RFC 7871 calls malformed.
func client(w dns.ResponseWriter, r *dns.Msg) (cl netip.Prefix, ecs *dns.EDNS0_SUBNET, ok bool) {
	if o := r.IsEdns0(); o != nil {
		for _, opt := range o.Option {
			e, isECS := opt.(*dns.EDNS0_SUBNET)
			if !isECS {
				continue
			}
			addr, okAddr := netip.AddrFromSlice(e.Address)
			bits := int(e.SourceNetmask)
			switch {
			case !okAddr, e.SourceScope != 0:
				return netip.Prefix{}, nil, false
			case e.Family == 0 && bits == 0:
				// dig +subnet=0 and others write "do not use my address" with no
				// family: answered as for any client (0.0.0.0/0), as miekg/dns reads it.
				addr = netip.IPv4Unspecified()
			case e.Family == 1 && addr.Unmap().Is4() && bits <= 32:
				addr = addr.Unmap()
			case e.Family == 2 && addr.Is4In6() && bits >= 96:
				addr, bits = addr.Unmap(), bits-96 // an IPv4 client written as ::ffff:a.b.c.d
			case e.Family == 2 && addr.Is6() && bits <= 128:
			default:
				return netip.Prefix{}, nil, false
			}
			p, err := addr.Prefix(bits)
			if err != nil || p.Addr() != addr { // bits set past the source prefix (RFC 7871 section 6)
				return netip.Prefix{}, nil, false
			}
			return p, e, true
		}
	}
	var a netip.Addr
	switch ra := w.RemoteAddr().(type) {
	case *net.UDPAddr:
		a = ra.AddrPort().Addr()
	case *net.TCPAddr:
		a = ra.AddrPort().Addr()
	}
	a = a.Unmap()
	if !a.IsValid() {
		return netip.Prefix{}, nil, true
	}
	return netip.PrefixFrom(a, a.BitLen()), nil, true
}

// location reads the client's location from the geoip plugin's metadata into l (empty
// when geoip and metadata are not configured or the address is not in the database).
// Only blocks that route by location pay for its frame.
//
//go:noinline
func location(ctx context.Context, l *routing.ClientLocation) {
	get := func(key string) string {
		if f := metadata.ValueFunc(ctx, key); f != nil {
			return f()
		}
		return ""
	}
	*l = routing.ClientLocation{
		Country:      strings.ToUpper(get("geoip/country/code")),
		Continent:    strings.ToUpper(get("geoip/continent/code")),
		Subdivisions: strings.ToUpper(get("geoip/subdivisions/code")),
	}
	if la, lo := get("geoip/latitude"), get("geoip/longitude"); la != "" && lo != "" {
		lat, err1 := strconv.ParseFloat(la, 64)
		lon, err2 := strconv.ParseFloat(lo, 64)
		l.Lat, l.Lon, l.HasCoords = lat, lon, err1 == nil && err2 == nil && view.ValidCoords(lat, lon)
	}
}

// echoECS adds the ECS option to the reply as RFC 7871 asks: the query's family,
// source prefix and address, with the scope the answer depended on (scope, in the
// family of cl, the client the answer was chosen for).
//
//go:noinline
func echoECS(m, r *dns.Msg, ecs *dns.EDNS0_SUBNET, cl netip.Prefix, scope uint8) {
	switch {
	case ecs.Family == 2 && cl.Addr().Is4() && scope > 0:
		scope += 96 // an IPv4 client written as ::ffff:a.b.c.d
	case ecs.Family == 0:
		scope = 0 // no family: no prefix for a scope to count bits of
	}
	o := r.IsEdns0()
	opt := &dns.OPT{Hdr: dns.RR_Header{Name: ".", Rrtype: dns.TypeOPT}, Option: []dns.EDNS0{&dns.EDNS0_SUBNET{
		Code: dns.EDNS0SUBNET, Family: ecs.Family, SourceNetmask: ecs.SourceNetmask,
		SourceScope: scope, Address: ecs.Address,
	}}}
	opt.SetUDPSize(o.UDPSize())
	if o.Do() {
		opt.SetDo()
	}
	m.Extra = append(m.Extra, opt)
}

// Ready implements ready.Readiness: true once every enabled check of this block has
// a first result (disabled checks need none, calculated ones need their children's).
func (h *HealthRoute) Ready() bool { return h.resolver.Ready() }

// specs is every check of the block.
func (h *HealthRoute) specs() []*health.Spec {
	out := make([]*health.Spec, 0, len(h.cfg.Checks))
	for _, s := range h.cfg.Checks {
		out = append(out, s)
	}
	return out
}

// dropCheckSeries deletes the check_healthy series of the block's checks that no
// running block defines any more (a reload that dropped them).
func (h *HealthRoute) dropCheckSeries() {
	blocks := h.reg.op.Blocks()
	for name := range h.cfg.Checks {
		if !slices.ContainsFunc(blocks, func(b operator.Block) bool { return b.HasCheck(name) }) {
			dropCheckFamilies(name)
		}
	}
}

// newResolver returns the routing engine for cfg, with the plugin's metrics and logs
// on each publication and the latency table parse loaded (or, for a blockConfig built
// without parse, the one it names).
func newResolver(cfg *blockConfig) *routing.Resolver {
	r := routing.New(&cfg.Config)
	r.OnPublish = func(prev, next *routing.Table, took time.Duration) { observePublication(r, prev, next, took) }
	switch {
	case cfg.latency != nil: // parse loaded it; the watcher replaces it from here on
		r.Latency.Store(cfg.latency)
		cfg.latency = nil
	case cfg.LatencyTable != "": // a blockConfig built without parse
		if _, err := r.LoadLatency(cfg.LatencyTable, cfg.fileLimit()); err != nil {
			log.Errorf("latency_table: %v", err)
		}
	}
	return r
}
