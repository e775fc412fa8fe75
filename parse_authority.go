package healthroute

import (
	"strconv"
	"time"

	"github.com/coredns/caddy"

	"github.com/healthroute/healthroute/routing"
)

// parseSOA reads `soa MNAME RNAME [SERIAL REFRESH RETRY EXPIRE MINIMUM]`.
func parseSOA(c *caddy.Controller, cfg *blockConfig, args []string) error {
	if len(args) != 2 && len(args) != 7 {
		return c.Errf("soa: expected MNAME RNAME [SERIAL REFRESH RETRY EXPIRE MINIMUM], got %d values", len(args))
	}
	mname, ok := normalizeName(args[0], false)
	if !ok {
		return c.Errf("soa: invalid MNAME '%s', expected a domain name", args[0])
	}
	rname, ok := normalizeName(args[1], false)
	if !ok {
		return c.Errf("soa: invalid RNAME '%s', expected a mailbox as a domain name (hostmaster.example.org.)", args[1])
	}
	cfg.SOA.Mname, cfg.SOA.Rname = mname, rname
	if len(args) == 7 {
		fields := []*uint32{&cfg.SOA.Serial, &cfg.SOA.Refresh, &cfg.SOA.Retry, &cfg.SOA.Expire, &cfg.SOA.Minimum}
		names := []string{"SERIAL", "REFRESH", "RETRY", "EXPIRE", "MINIMUM"}
		for i, f := range fields {
			n, err := strconv.ParseUint(args[2+i], 10, 32)
			if err != nil {
				return c.Errf("soa: invalid %s '%s', expected a number from 0 to 4294967295", names[i], args[2+i])
			}
			*f = uint32(n)
		}
		cfg.state().soaSet = true
	}
	return nil
}

// parseNS reads `ns NAME...`.
func parseNS(c *caddy.Controller, cfg *blockConfig, args []string) error {
	if len(args) == 0 {
		return c.ArgErr()
	}
	for _, a := range args {
		n, ok := normalizeName(a, false)
		if !ok {
			return c.Errf("ns: invalid name server '%s', expected a domain name", a)
		}
		cfg.NS = append(cfg.NS, n)
	}
	cfg.state().nsPos = pos{c.File(), c.Line()}
	return nil
}

// The SOA timers when the block sets none (RFC 1912 section 2.2 ranges).
const (
	soaRefresh = 7200
	soaRetry   = 1800
	soaExpire  = 1209600
)

// authorityDefaults fills the SOA fields the block did not set: the serial is the
// time the configuration was read (so it grows with every change that is loaded),
// the negative TTL the block's ttl. Without fallthrough the block is the whole zone:
// an in-zone name server must then have an address record in it.
func authorityDefaults(cfg *blockConfig, now time.Time) error {
	if !cfg.state().soaSet {
		cfg.SOA.Serial = uint32(now.Unix())
		cfg.SOA.Refresh, cfg.SOA.Retry, cfg.SOA.Expire, cfg.SOA.Minimum = soaRefresh, soaRetry, soaExpire, cfg.TTL
	}
	for _, n := range cfg.NS {
		if z := routing.MatchZone(cfg.Zones, n); z == "" || cfg.Fall.Through(n) {
			continue
		}
		found := false
		for _, rs := range cfg.Records {
			if rs.Name != n {
				continue
			}
			for _, m := range rs.Members {
				found = found || m.Kind == routing.KindA || m.Kind == routing.KindAAAA || m.Kind == routing.KindAlias
			}
		}
		if !found {
			return cfg.state().nsPos.errorf("ns: %s is in zone %s but no record gives it an address; add `record %s simple { A ADDRESS }`", n, routing.MatchZone(cfg.Zones, n), n)
		}
	}
	return nil
}
