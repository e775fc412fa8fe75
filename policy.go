package healthroute

// Client-dependent selection (docs/routing.md#latency to #ip, and
// #evaluate-target-health). These run per
// query, over data the compile step prepared; they neither lock nor allocate.

// memberOK reports whether member i of n is healthy for q: its check and, with
// evaluate target health, a healthy answer in its target for this client.
func (r *resolver) memberOK(t *table, n *node, i int32, q *query) bool {
	if !t.state(n.id).ok[i] {
		return false
	}
	mn := &n.members[i]
	if mn.child == nil || !mn.m.ETH || !mn.child.dynHealth {
		return true // ok already holds the static child's branch health
	}
	return r.branchHealthy(t, mn.child, q)
}

// branchHealthy reports whether n has a healthy answer for q.
func (r *resolver) branchHealthy(t *table, n *node, q *query) bool {
	if !n.dynHealth {
		return t.state(n.id).healthy
	}
	switch n.set.Policy {
	case policyGeolocation:
		for i := range n.members { // only the records that apply to this client count
			if geoLevel(&n.members[i], &q.Loc) >= 0 && r.memberOK(t, n, int32(i), q) {
				return true
			}
		}
		return false
	case policyIPBased:
		if m, ok := n.links.ip.lookup(q.Client); ok && r.memberOK(t, n, m, q) {
			return true
		}
		return n.links.ipDefault >= 0 && r.memberOK(t, n, n.links.ipDefault, q)
	case policyAZAffinity:
		return r.azHealthy(t, n, q)
	}
	for i := range n.members {
		if r.memberOK(t, n, int32(i), q) {
			return true
		}
	}
	return false
}

// pickForClient picks a member of a client-dependent node for q, or -1 when no record
// applies to the client.
func (r *resolver) pickForClient(t *table, n *node, q *query) int32 {
	switch n.set.Policy {
	case policyLatency, policyGeoproximity, policyGeolocation:
		// The best-ranked healthy member; when none is healthy, the best-ranked
		// member (the last resort). Ties go to the member listed first.
		best, bestOK := int32(-1), int32(-1)
		var key, keyOK float64
		var row []uint32 // latency: the table's row for this client, looked up once
		if lat := r.latency.Load(); lat != nil && n.set.Policy == policyLatency {
			row, _ = lat.rows.lookup(q.Client)
		}
		for i := range n.members {
			k := r.rank(n, int32(i), q, row)
			if k < 0 {
				continue // does not apply to this client
			}
			if best < 0 || k < key {
				best, key = int32(i), k
			}
			if (bestOK < 0 || k < keyOK) && r.memberOK(t, n, int32(i), q) {
				bestOK, keyOK = int32(i), k
			}
		}
		if bestOK >= 0 {
			return bestOK
		}
		return best
	case policyIPBased:
		m, matched := n.links.ip.lookup(q.Client)
		def := n.links.ipDefault
		switch {
		case matched && r.memberOK(t, n, m, q):
			return m
		case def >= 0 && r.memberOK(t, n, def, q):
			return def
		case matched:
			return m // both unhealthy: the matched record (docs/routing.md#ip)
		}
		return def // -1 without a default: NODATA
	case policyFailover:
		first := int32(-1)
		for _, role := range [2]role{rolePrimary, roleSecondary} {
			for i := range n.members {
				if n.members[i].m.Role != role {
					continue
				}
				if first < 0 {
					first = int32(i)
				}
				if r.memberOK(t, n, int32(i), q) {
					return int32(i)
				}
			}
		}
		return first
	case policyWeighted:
		return r.weighted(t, n, q)
	case policyAZAffinity:
		return r.pickAZ(t, n, q)
	}
	return 0 // simple: its one member
}

// rank is member i's distance from the client, lower is better, or -1 when the
// member does not apply to this client (geolocation). row is the latency table's row
// for the client (nil: none).
func (r *resolver) rank(n *node, i int32, q *query, row []uint32) float64 {
	mn := &n.members[i]
	switch n.set.Policy {
	case policyGeolocation:
		return float64(geoLevel(mn, &q.Loc))
	case policyGeoproximity:
		if !q.Loc.HasCoords {
			return float64(i) // unknown location: equally far from all (docs/routing.md#geoproximity)
		}
		return biased(haversine(q.Loc.Lat, q.Loc.Lon, mn.m.Lat, mn.m.Lon), int(mn.m.Bias))
	}
	// Latency: the measured table, else great-circle distance, else listing order.
	if row != nil {
		if ms := row[mn.region]; ms != unknownLatency {
			return float64(ms)
		}
		return unknownLatency + float64(i) // unmeasured regions after measured ones
	}
	p := r.plan
	if q.Loc.HasCoords && p.hasCoords[mn.region] {
		reg := &p.regions[mn.region]
		return haversine(q.Loc.Lat, q.Loc.Lon, reg.Lat, reg.Lon)
	}
	return float64(i)
}

// geoLevel is how closely a geolocation member applies to the client: 0 for its
// subdivision, 1 country, 2 continent, 3 default; -1 when it does not apply.
func geoLevel(mn *mnode, loc *clientLocation) int {
	m := mn.m
	switch m.Geo {
	case geoDefault:
		return 3
	case geoContinent:
		if loc.continent() == m.GeoCode {
			return 2
		}
	case geoCountry:
		if loc.Country == m.GeoCode {
			return 1
		}
	case geoSubdivision:
		cc, sub := m.GeoCode[:2], m.GeoCode[3:]
		if loc.Country == cc && loc.inSubdivision(sub) {
			return 0
		}
	}
	return -1
}

// weighted picks in a weighted node whose members' health depends on the client:
// the same rules as the static case (docs/routing.md#weighted), evaluated for q.
func (r *resolver) weighted(t *table, n *node, q *query) int32 {
	var ok [maxWeighted]bool // on the stack: a weighted group's members
	var sum uint64
	zero := 0
	for i := range n.members {
		if ok[i] = r.memberOK(t, n, int32(i), q); ok[i] {
			if w := n.members[i].m.Weight; w > 0 {
				sum += uint64(w)
			} else {
				zero++
			}
		}
	}
	switch {
	case sum > 0:
		x := r.rand(sum)
		for i := range n.members {
			if w := uint64(n.members[i].m.Weight); ok[i] && w > 0 {
				if x < w {
					return int32(i)
				}
				x -= w
			}
		}
	case zero > 0:
		x := r.rand(uint64(zero))
		for i := range n.members {
			if ok[i] {
				if x == 0 {
					return int32(i)
				}
				x--
			}
		}
	}
	return r.pick(t.state(n.id)) // the last resort, prepared at compile
}

// nodeScope is the ECS scope of the choice at client-dependent node n for q (RFC
// 7871 section 7.2.1): the longest prefix of the client's address that could change
// it, in the client's family; 0 when no client could get another answer.
// scopeReason (explain) says why, and follows the same cases.
func (r *resolver) nodeScope(n *node, q *query) uint8 {
	var s uint8
	switch n.set.Policy {
	case policyIPBased:
		s = n.links.ip.scope(q.Client)
	case policyLatency:
		if lat := r.latency.Load(); lat != nil {
			s = lat.rows.scope(q.Client)
		}
		if n.byLoc {
			s = max(s, uint8(q.Client.Bits()))
		}
	case policyGeolocation, policyGeoproximity:
		if n.byLoc {
			s = uint8(q.Client.Bits())
		}
	case policyAZAffinity:
		s = r.azScope(q)
	}
	for _, c := range n.healthKids() { // evaluate target health into client-dependent targets
		s = max(s, r.nodeScope(c, q))
	}
	return s
}
