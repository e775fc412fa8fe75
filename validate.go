package healthroute

import (
	"maps"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/miekg/dns"

	"github.com/healthroute/healthroute/control"
	"github.com/healthroute/healthroute/health"
	"github.com/healthroute/healthroute/routing"
)

// validate checks what needs the whole block, once parse has read it (and the
// route53 and route53_api record sets): calculated checks' children, the controls,
// the location lines, the record sets, and the authority's defaults. children are the
// calculated checks' children as written, checkPos where each check was given.
func validate(cfg *blockConfig, children map[*health.Spec][]childRef, checkPos map[string]pos) error {
	if err := resolveChildren(cfg, children); err != nil {
		return err
	}
	if err := finishControls(cfg, checkPos); err != nil {
		return err
	}
	for _, s := range cfg.Checks {
		s.Seal()
	}
	if err := validateAZ(cfg); err != nil {
		return err
	}
	if err := validateRecords(cfg); err != nil {
		return err
	}
	for _, w := range placementWarnings(cfg) {
		log.Warning(w)
	}
	if err := authorityDefaults(cfg, time.Now()); err != nil {
		return err
	}
	return nil
}

// validateRecords checks what the record sets need of each other: check and alias
// targets, cycles, set identifiers, per-group membership rules and type clashes.
func validateRecords(cfg *blockConfig) error {
	sets := map[string][]*routing.RecordSet{} // by name: one block per type, or one for all
	parsed := cfg.state()
	for _, rs := range cfg.Records {
		sets[rs.Name] = append(sets[rs.Name], rs)
	}
	for _, rs := range cfg.Records {
		for _, m := range rs.Members {
			if err := resolveMember(cfg, parsed, sets, rs, m); err != nil {
				return err
			}
		}
	}
	w := aliasWalk{parsed: parsed, sets: sets, served: map[*routing.RecordSet]routing.Types{}, byName: map[string]routing.Types{},
		dynamic: map[string]bool{}, paths: map[string]int{}, state: map[string]int{}}
	for _, rs := range cfg.Records {
		if err := w.visit(rs.Name, nil); err != nil {
			return err
		}
	}
	return validateGroups(cfg, parsed, &w)
}

// resolveMember binds m's check and region by name and refuses what a member of rs's
// policy and name cannot be.
func resolveMember(cfg *blockConfig, parsed *parseState, sets map[string][]*routing.RecordSet, rs *routing.RecordSet, m *routing.Member) error {
	if name, ok := parsed.checkNames[m]; ok {
		spec, ok := cfg.Checks[name]
		if !ok {
			return parsed.pos[m].errorf("record %s: unknown check '%s'", rs.Name, name)
		}
		m.Check = spec
	}
	if m.Kind == routing.KindAlias {
		if _, ok := sets[m.Target]; !ok {
			return parsed.pos[m].errorf("record %s: unknown alias target '%s', expected a record defined in this block", rs.Name, m.Target)
		}
	}
	if rs.Policy == routing.PolicyGeoproximity {
		if m.Region != "" {
			r, ok := cfg.Regions[m.Region]
			if !ok {
				return parsed.pos[m].errorf("record %s: unknown region '%s', expected one defined with 'region NAME LATITUDE LONGITUDE'", rs.Name, m.Region)
			}
			m.Lat, m.Lon = r.Lat, r.Lon
		}
		m.Lat, m.Lon = routing.Truncate2(m.Lat), routing.Truncate2(m.Lon) // as Route 53 does
	}
	if rs.Policy == routing.PolicyMultivalue && (m.Kind == routing.KindAlias || m.Type == dns.TypeCNAME || m.Type == dns.TypeNS) {
		return parsed.pos[m].errorf("record %s: multivalue members must be A or AAAA or any other type but CNAME and NS, not %s", rs.Name, m.TypeName())
	}
	if m.Type == dns.TypeNS && m.Kind != routing.KindAlias {
		if strings.HasPrefix(rs.Name, "*.") {
			return parsed.pos[m].errorf("record %s: NS at a wildcard name, expected a delegation at an exact name", rs.Name)
		}
		if slices.Contains(cfg.Zones, rs.Name) {
			return parsed.pos[m].errorf("record %s: NS at the zone apex, expected the ns property for the zone's own name servers", rs.Name)
		}
	}
	return nil
}

// aliasWalk finds alias cycles, then which types each name serves (aliases inherit
// their targets'), and how many record sets judging a name's health for one client
// may visit: a member that evaluates target health into a client-dependent group
// (geolocation, ip, azaffinity, or a group evaluating into one) is judged per query,
// through its branch.
type aliasWalk struct {
	parsed  *parseState
	sets    map[string][]*routing.RecordSet
	served  map[*routing.RecordSet]routing.Types // the types each record set answers
	byName  map[string]routing.Types             // and each name
	dynamic map[string]bool                      // judged per client
	paths   map[string]int                       // record sets visited judging it, counted per path
	state   map[string]int                       // 1: being visited, 2: done
}

func (w *aliasWalk) visit(name string, path []string) error {
	switch w.state[name] {
	case 1:
		return w.parsed.setPos[w.sets[name][0]].errorf("record %s: alias cycle: %s", name, strings.Join(append(path, name), " -> "))
	case 2:
		return nil
	}
	w.state[name] = 1
	var all routing.Types
	n, dyn := 1, false
	for _, rs := range w.sets[name] {
		var k routing.Types
		dyn = dyn || rs.Policy == routing.PolicyGeolocation || rs.Policy == routing.PolicyIPBased || rs.Policy == routing.PolicyAZAffinity
		for _, m := range rs.Members {
			if m.Kind != routing.KindAlias {
				k = k.With(m.Type)
				continue
			}
			if err := w.visit(m.Target, append(path, name)); err != nil {
				return err
			}
			var err error
			if k, err = w.aliasTypes(rs, m, k); err != nil {
				return err
			}
			if m.ETH && w.dynamic[m.Target] {
				dyn, n = true, min(n+w.paths[m.Target], maxAliasPaths+1)
			}
		}
		for _, t := range k {
			if all.Has(t) {
				other := w.sets[name][slices.IndexFunc(w.sets[name], func(o *routing.RecordSet) bool { return w.served[o].Has(t) })]
				return w.parsed.setPos[rs].errorf("record %s: defined twice for %s (first at line %d, directly or through aliases); a name has one block, or one block per type", name, dns.TypeToString[t], w.parsed.setPos[other].line)
			}
			all = all.With(t)
		}
		w.served[rs] = k
	}
	if n > maxAliasPaths {
		return w.parsed.setPos[w.sets[name][0]].errorf("record %s: evaluate target health into geolocation or ip groups reaches more than %d record sets counted once per path (targets shared by several aliases multiply), expected at most %d", name, maxAliasPaths, maxAliasPaths)
	}
	w.dynamic[name], w.paths[name] = dyn, n
	if all.Has(dns.TypeCNAME) && len(all) > 1 {
		other := dns.TypeToString[all[slices.IndexFunc(all, func(t uint16) bool { return t != dns.TypeCNAME })]]
		if all.Has(dns.TypeA) || all.Has(dns.TypeAAAA) {
			other = "A/AAAA"
		}
		return w.parsed.setPos[w.sets[name][0]].errorf("record %s: CNAME and %s at one name (directly or through aliases); a CNAME must be alone", name, other)
	}
	w.byName[name] = all
	w.state[name] = 2
	return nil
}

// aliasTypes adds to k the types alias member m of rs answers: its type, or every type
// of its target an alias can have (not NS or DS).
func (w *aliasWalk) aliasTypes(rs *routing.RecordSet, m *routing.Member, k routing.Types) (routing.Types, error) {
	switch t := w.byName[m.Target]; {
	case !slices.ContainsFunc(t, func(x uint16) bool { return routing.AliasTypes[x] }):
		return k, w.parsed.pos[m].errorf("record %s: alias target '%s' serves no records an alias can answer (NS and DS are not)", rs.Name, m.Target)
	case m.Type != 0 && !t.Has(m.Type):
		return k, w.parsed.pos[m].errorf("record %s: alias target '%s' serves no %s records", rs.Name, m.Target, dns.TypeToString[m.Type])
	case m.Type != 0:
		return k.With(m.Type), nil
	default:
		for _, x := range t {
			if routing.AliasTypes[x] {
				k = k.With(x)
			}
		}
		return k, nil
	}
}

// validateGroups checks the rules of each type group (each type's members form a group
// of their own). Set identifiers are unique within a group, as Route 53 scopes them to
// a name and type.
func validateGroups(cfg *blockConfig, parsed *parseState, w *aliasWalk) error {
	for _, rs := range cfg.Records {
		for _, t := range w.served[rs] {
			var group []*routing.Member
			ids := map[string]bool{}
			for _, m := range rs.Members {
				if m.Type == t || (m.Kind == routing.KindAlias && m.Type == 0 && routing.AliasTypes[t] && w.byName[m.Target].Has(t)) {
					if ids[m.ID] {
						return parsed.pos[m].errorf("record %s: duplicate set identifier '%s' among the %s members, give each member of a type a unique id", rs.Name, m.ID, dns.TypeToString[t])
					}
					ids[m.ID] = true
					group = append(group, m)
				}
			}
			if err := validateGroup(parsed, rs, dns.TypeToString[t], group); err != nil {
				return err
			}
		}
	}
	return nil
}

// maxAliasPaths bounds the record sets a query may visit to judge evaluate target
// health into client-dependent groups below one name, counted once per path (the
// judgement is per client, so it is not precomputed). Aliases that share targets level
// after level double that count at each level.
const maxAliasPaths = 10_000

func validateGroup(parsed *parseState, rs *routing.RecordSet, t string, group []*routing.Member) error {
	if len(group) == 0 {
		return nil
	}
	switch rs.Policy {
	case routing.PolicySimple:
		if len(group) > 1 {
			return parsed.pos[group[1]].errorf("record %s: a simple record has one member per type, found %d for %s; list several addresses on one line", rs.Name, len(group), t)
		}
	case routing.PolicyFailover:
		var p, s int
		for _, m := range group {
			if m.Role == routing.RolePrimary {
				p++
			} else {
				s++
			}
			if p > 1 || s > 1 {
				return parsed.pos[m].errorf("record %s: failover has one primary and one secondary per type, found a second %s", rs.Name, routing.RoleName(m.Role))
			}
		}
		if p == 0 {
			return parsed.setPos[rs].errorf("record %s: failover %s group has no primary", rs.Name, t)
		}
	case routing.PolicyWeighted:
		if len(group) > routing.MaxWeighted {
			return parsed.pos[group[routing.MaxWeighted]].errorf("record %s: at most %d weighted members per type, found %d", rs.Name, routing.MaxWeighted, len(group))
		}
	case routing.PolicyLatency:
		seen := map[string]bool{}
		for _, m := range group {
			if seen[m.Region] {
				return parsed.pos[m].errorf("record %s: region '%s' has a second %s member; latency records have one per region", rs.Name, m.Region, t)
			}
			seen[m.Region] = true
		}
	case routing.PolicyGeolocation:
		seen := map[string]bool{}
		for _, m := range group {
			key := m.GeoCode
			if m.Default {
				key = "default"
			}
			if seen[key] {
				return parsed.pos[m].errorf("record %s: location '%s' has a second %s member", rs.Name, key, t)
			}
			seen[key] = true
		}
		if !seen["default"] {
			log.Warningf("record %s: geolocation %s group has no default: clients elsewhere get no answer", rs.Name, t)
		}
	case routing.PolicyAZAffinity:
		return validateAZGroup(parsed, rs, t, group)
	case routing.PolicyIPBased:
		seen := map[netip.Prefix]bool{}
		defaults := 0
		for _, m := range group {
			if m.Default {
				if defaults++; defaults > 1 {
					return parsed.pos[m].errorf("record %s: a second %s default member", rs.Name, t)
				}
			}
			for _, p := range m.CIDRs {
				if seen[p] {
					return parsed.pos[m].errorf("record %s: prefix %s is in two %s members", rs.Name, p, t)
				}
				seen[p] = true
			}
		}
		if defaults == 0 {
			log.Warningf("record %s: ip %s group has no default: unmatched clients get no answer", rs.Name, t)
		}
	}
	return nil
}

// validateAZGroup refuses two members of one group for one location.
func validateAZGroup(parsed *parseState, rs *routing.RecordSet, t string, group []*routing.Member) error {
	seen := map[routing.AZKey]bool{}
	for _, m := range group {
		k := routing.AZKey{Level: m.AZLevel, ID: m.AZID}
		if seen[k] {
			return parsed.pos[m].errorf("record %s: location '%s' has a second %s member; azaffinity records have one per location", rs.Name, routing.AZKeyString(k), t)
		}
		seen[k] = true
	}
	if !seen[routing.AZKey{Level: routing.AZGlobal}] {
		log.Warningf("record %s: azaffinity %s group has no global member: queries from unknown locations get no answer", rs.Name, t)
	}
	return nil
}

// resolveChildren links calculated checks to their children and refuses unknown
// children and cycles.
func resolveChildren(cfg *blockConfig, children map[*health.Spec][]childRef) error {
	order := slices.SortedFunc(maps.Keys(children), func(a, b *health.Spec) int {
		return children[a][0].pos.line - children[b][0].pos.line // Corefile order: stable errors
	})
	for _, s := range order {
		refs := children[s]
		for _, r := range refs {
			k, ok := cfg.Checks[r.name]
			if !ok {
				return r.pos.errorf("check %s: unknown child check '%s'", s.Name, r.name)
			}
			s.Children = append(s.Children, k)
		}
	}
	const (
		white = iota
		grey
		black
	)
	color := map[*health.Spec]int{}
	var visit func(s *health.Spec, path []string) error
	visit = func(s *health.Spec, path []string) error {
		switch color[s] {
		case grey:
			return children[s][0].pos.errorf("check %s: calculated checks form a cycle: %s", s.Name, strings.Join(append(path, s.Name), " -> "))
		case black:
			return nil
		}
		color[s] = grey
		for _, k := range s.Children {
			if err := visit(k, append(path, s.Name)); err != nil {
				return err
			}
		}
		color[s] = black
		return nil
	}
	for _, s := range order {
		if err := visit(s, nil); err != nil {
			return err
		}
	}
	// Evaluating a calculated check walks its children recursively, a child shared by
	// several parents once per path: ladders of shared children grow exponentially.
	// Bound the sum over every check, counted the same way (saturating).
	size := map[*health.Spec]int{}
	var expand func(s *health.Spec) int
	expand = func(s *health.Spec) int {
		if n, ok := size[s]; ok {
			return n
		}
		n := 1
		for _, k := range s.Children {
			n = min(n+expand(k), maxCheckExpansion+1)
		}
		size[s] = n
		return n
	}
	total := len(cfg.Checks) - len(order)
	for _, s := range order {
		if total += expand(s); total > maxCheckExpansion {
			return children[s][0].pos.errorf("check %s: calculated checks expand to more than %d child evaluations (a child shared by several parents counts once per path), expected at most %d: share fewer children between nested calculated checks", s.Name, maxCheckExpansion, maxCheckExpansion)
		}
	}
	return nil
}

// finishControls completes cfg.Controls once the block is read: a block with
// control checks and no controls property gets a single voter of its own (or,
// in a fleet, an error: the voters must be listed); the rules must name control
// checks and form no gating cycle; the control port must be authenticated or on
// loopback.
func finishControls(cfg *blockConfig, checkPos map[string]pos) error {
	names := controlNames(cfg)
	cc := cfg.Controls
	if cc == nil {
		if len(names) == 0 && cfg.R53API == nil {
			return nil
		}
		if len(names) == 0 { // the API's record sets live in the same state
			if cfg.Fleet != nil && len(cfg.Fleet.Join) > 0 {
				return cfg.R53API.at.errorf("route53_api: in a fleet the API's record sets live in the replicated state: expected a controls block listing the voters (controls { voters NAME=ADDRESS:PORT... })")
			}
			cfg.Controls = &controlsConfig{DataDir: cfg.controlsDir, rulePos: map[string]pos{}, at: cfg.R53API.at}
			return nil
		}
		at := checkPos[names[0]]
		if cfg.Fleet != nil && len(cfg.Fleet.Join) > 0 {
			return at.errorf("check %s: control checks in a fleet need a controls block listing the voters (controls { voters NAME=ADDRESS:PORT... }), so that every member holds the same state", names[0])
		}
		cc = &controlsConfig{DataDir: cfg.controlsDir, rulePos: map[string]pos{}, at: at}
		cfg.Controls = cc
	}
	for _, r := range cc.Rules {
		if err := control.CheckRules([]control.Rule{r}, names); err != nil {
			return cc.rulePos[r.Name].errorf("controls: %v", err)
		}
	}
	if err := control.CheckRules(cc.Rules, names); err != nil {
		return cc.at.errorf("controls: %v", err)
	}
	if cfg.Fleet != nil {
		if len(cfg.Fleet.Join) > 0 && len(cc.Voters) == 0 {
			return cc.at.errorf("controls: voters: missing, expected every member's NAME=ADDRESS:PORT (its fleet name and control port), this one's included")
		}
		if !cc.bindSet {
			cc.Bind = netip.AddrPortFrom(cfg.Fleet.Bind.Addr(), control.DefaultPort).String()
		}
	} else if len(cc.Voters) > 0 && !cc.bindSet {
		return cc.at.errorf("controls: bind: missing, expected this member's control port (ADDRESS:PORT) to reach the voters")
	}
	if len(cc.Voters) > 0 && !slices.ContainsFunc(cc.Voters, func(s control.Server) bool { return s.ID == controlsMember(cfg) }) {
		return cc.at.errorf("controls: voters: this member (%s) is not listed, expected it among the voters", controlsMember(cfg))
	}
	if cc.Bind != "" && (cfg.Fleet == nil || len(cfg.Fleet.Key) == 0) {
		if ap, _ := netip.ParseAddrPort(cc.Bind); !ap.Addr().IsLoopback() {
			return cc.at.errorf("controls: bind: %s is not a loopback address and there is no fleet key_file to authenticate the control port: anyone reaching it could change controls; expected a loopback address or a fleet with key_file", cc.Bind)
		}
	}
	return nil
}

// validateAZ checks the location lines and the azaffinity members' locations, after
// the whole block was read: each location must be placed in its containing ones.
func validateAZ(cfg *blockConfig) error {
	az := cfg.AZ
	if az != nil {
		if az.Server != nil {
			if _, err := az.Chain(az.Server.Level, az.Server.ID); err != nil {
				return cfg.parsing.azWhere[az.Server].errorf("location: %v", err)
			}
		}
		for i := range az.Clients {
			k := &az.Clients[i].Key
			if _, err := az.Chain(k.Level, k.ID); err != nil {
				return cfg.parsing.azClientPos[i].errorf("client_location: %v", err)
			}
		}
		if err := azConsistent(az, cfg.parsing.azDeclPos); err != nil {
			return err
		}
	}
	for _, rs := range cfg.Records {
		if rs.Policy != routing.PolicyAZAffinity {
			continue
		}
		for _, m := range rs.Members {
			if m.AZLevel == routing.AZGlobal {
				continue
			}
			if _, err := az.Chain(m.AZLevel, m.AZID); err != nil {
				return cfg.parsing.pos[m].errorf("record %s: %s: %v", rs.Name, m.AZLevel, err)
			}
		}
	}
	return nil
}

// azConsistent refuses az_location lines that place one zone group or region in two
// different containing locations.
func azConsistent(az *routing.AZConfig, declPos map[string]pos) error {
	parent := map[string]string{} // zone group or region -> the AZ whose line placed it
	for _, id := range slices.Sorted(maps.Keys(az.Declared)) {
		d := az.Declared[id]
		for lvl := 1; lvl < 3; lvl++ {
			first, ok := parent[d[lvl]]
			if p := az.Declared[first]; ok && !slices.Equal(p[lvl+1:], d[lvl+1:]) {
				return declPos[id].errorf("az_location: %s %s is placed in %s here and in %s by the line of %s (line %d), expected one place",
					routing.AZLevel(lvl+1), d[lvl], strings.Join(d[lvl+1:], " "), strings.Join(p[lvl+1:], " "), first, declPos[first].line)
			}
			if !ok {
				parent[d[lvl]] = id
			}
		}
	}
	return nil
}
