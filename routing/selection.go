package routing

// Client-dependent selection (docs/routing.md#latency to #ip, and
// #evaluate-target-health). These run per
// query, over data the compile step prepared; they neither lock nor allocate.

// memberOK reports whether member i of n is healthy for q: its check and, with
// evaluate target health, a healthy answer in its target for this client.
func (r *Resolver) memberOK(t *Table, n *Node, i int32, q *Query) bool {
	if !t.State(n.ID).OK[i] {
		return false
	}
	mn := &n.Members[i]
	if mn.Child == nil || !mn.Member.ETH || !mn.Child.DynHealth {
		return true // ok already holds the static child's branch health
	}
	return r.branchHealthy(t, mn.Child, q)
}

// branchHealthy reports whether n has a healthy answer for q.
func (r *Resolver) branchHealthy(t *Table, n *Node, q *Query) bool {
	if !n.DynHealth {
		return t.State(n.ID).healthy
	}
	switch n.Set.Policy {
	case PolicyGeolocation:
		for i := range n.Members { // only the records that apply to this client count
			if geoLevel(&n.Members[i], &q.Loc) >= 0 && r.memberOK(t, n, int32(i), q) {
				return true
			}
		}
		return false
	case PolicyIPBased:
		if m, ok := n.links.ip.Lookup(q.Client); ok && r.memberOK(t, n, m, q) {
			return true
		}
		return n.links.ipDefault >= 0 && r.memberOK(t, n, n.links.ipDefault, q)
	case PolicyAZAffinity:
		return r.azHealthy(t, n, q)
	}
	for i := range n.Members {
		if r.memberOK(t, n, int32(i), q) {
			return true
		}
	}
	return false
}

// pickForClient picks a member of a client-dependent node for q, or -1 when no record
// applies to the client.
func (r *Resolver) pickForClient(t *Table, n *Node, q *Query) int32 {
	switch n.Set.Policy {
	case PolicyLatency, PolicyGeoproximity, PolicyGeolocation:
		// The best-ranked healthy member; when none is healthy, the best-ranked
		// member (the last resort). Ties go to the member listed first.
		best, bestOK := int32(-1), int32(-1)
		var key, keyOK float64
		var row []uint32 // latency: the table's row for this client, looked up once
		if lat := r.Latency.Load(); lat != nil && n.Set.Policy == PolicyLatency {
			row, _ = lat.Rows.Lookup(q.Client)
		}
		for i := range n.Members {
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
	case PolicyIPBased:
		m, matched := n.links.ip.Lookup(q.Client)
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
	case PolicyFailover:
		first := int32(-1)
		for _, role := range [2]Role{RolePrimary, RoleSecondary} {
			for i := range n.Members {
				if n.Members[i].Member.Role != role {
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
	case PolicyWeighted:
		return r.weighted(t, n, q)
	case PolicyAZAffinity:
		return r.pickAZ(t, n, q)
	}
	return 0 // simple: its one member
}

// rank is member i's distance from the client, lower is better, or -1 when the
// member does not apply to this client (geolocation). row is the latency table's row
// for the client (nil: none).
func (r *Resolver) rank(n *Node, i int32, q *Query, row []uint32) float64 {
	mn := &n.Members[i]
	switch n.Set.Policy {
	case PolicyGeolocation:
		return float64(geoLevel(mn, &q.Loc))
	case PolicyGeoproximity:
		if !q.Loc.HasCoords {
			return float64(i) // unknown location: equally far from all (docs/routing.md#geoproximity)
		}
		return biased(haversine(q.Loc.Lat, q.Loc.Lon, mn.Member.Lat, mn.Member.Lon), int(mn.Member.Bias))
	}
	// Latency: the measured table, else great-circle distance, else listing order.
	if row != nil {
		if ms := row[mn.region]; ms != UnknownLatency {
			return float64(ms)
		}
		return UnknownLatency + float64(i) // unmeasured regions after measured ones
	}
	p := r.Plan
	if q.Loc.HasCoords && p.hasCoords[mn.region] {
		reg := &p.regions[mn.region]
		return haversine(q.Loc.Lat, q.Loc.Lon, reg.Lat, reg.Lon)
	}
	return float64(i)
}

// geoLevel is how closely a geolocation member applies to the client: 0 for its
// subdivision, 1 country, 2 continent, 3 default; -1 when it does not apply.
func geoLevel(mn *MemberNode, loc *ClientLocation) int {
	m := mn.Member
	switch m.Geo {
	case GeoDefault:
		return 3
	case GeoContinent:
		if loc.continent() == m.GeoCode {
			return 2
		}
	case GeoCountry:
		if loc.Country == m.GeoCode {
			return 1
		}
	case GeoSubdivision:
		cc, sub := m.GeoCode[:2], m.GeoCode[3:]
		if loc.Country == cc && loc.inSubdivision(sub) {
			return 0
		}
	}
	return -1
}

// weighted picks in a weighted node whose members' health depends on the client:
// the same rules as the static case (docs/routing.md#weighted), evaluated for q.
func (r *Resolver) weighted(t *Table, n *Node, q *Query) int32 {
	var ok [MaxWeighted]bool // on the stack: a weighted group's members
	var sum uint64
	zero := 0
	for i := range n.Members {
		if ok[i] = r.memberOK(t, n, int32(i), q); ok[i] {
			if w := n.Members[i].Member.Weight; w > 0 {
				sum += uint64(w)
			} else {
				zero++
			}
		}
	}
	switch {
	case sum > 0:
		x := r.rand(sum)
		for i := range n.Members {
			if w := uint64(n.Members[i].Member.Weight); ok[i] && w > 0 {
				if x < w {
					return int32(i)
				}
				x -= w
			}
		}
	case zero > 0:
		x := r.rand(uint64(zero))
		for i := range n.Members {
			if ok[i] {
				if x == 0 {
					return int32(i)
				}
				x--
			}
		}
	}
	return r.pick(t.State(n.ID)) // the last resort, prepared at compile
}

// nodeScope is the ECS scope of the choice at client-dependent node n for q (RFC
// 7871 section 7.2.1): the longest prefix of the client's address that could change
// it, in the client's family; 0 when no client could get another answer.
// scopeReason (explain) says why, and follows the same cases.
func (r *Resolver) nodeScope(n *Node, q *Query) uint8 {
	var s uint8
	switch n.Set.Policy {
	case PolicyIPBased:
		s = n.links.ip.Scope(q.Client)
	case PolicyLatency:
		if lat := r.Latency.Load(); lat != nil {
			s = lat.Rows.Scope(q.Client)
		}
		if n.byLoc {
			s = max(s, uint8(q.Client.Bits()))
		}
	case PolicyGeolocation, PolicyGeoproximity:
		if n.byLoc {
			s = uint8(q.Client.Bits())
		}
	case PolicyAZAffinity:
		s = r.azScope(q)
	}
	for _, c := range n.healthKids() { // evaluate target health into client-dependent targets
		s = max(s, r.nodeScope(c, q))
	}
	return s
}
