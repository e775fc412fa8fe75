package healthroute

import (
	"fmt"
	"sync/atomic"
	"time"

	"github.com/healthroute/healthroute/control"
)

// AZ-affinity routing (docs/az-affinity.md): members each for a location, from the
// most specific (an Availability Zone ID) to the least (global); a query gets the
// first healthy member for its own location in that order, the most specific one
// when all are unhealthy, and only a global member when its location is unknown.

// azLevel is an azaffinity member's location type; a smaller one is more specific.
type azLevel uint8

// Location types, most specific first.
const (
	azZone      azLevel = iota + 1 // an Availability Zone, by AZ ID (use1-az1)
	azZoneGroup                    // a zone group (us-east-1-zg-1)
	azRegion                       // a region (us-east-1)
	azPartition                    // a partition (aws)
	azGlobal                       // every query, its location known or not
)

var azLevelNames = [...]string{azZone: "az", azZoneGroup: "zone_group", azRegion: "region", azPartition: "partition", azGlobal: "global"}

// String returns the Corefile spelling of l.
func (l azLevel) String() string {
	if int(l) < len(azLevelNames) && azLevelNames[l] != "" {
		return azLevelNames[l]
	}
	return fmt.Sprintf("azlevel(%d)", uint8(l))
}

// azChain is a location and every location that contains it: AZ ID, zone group,
// region and partition, by level-1; "" where the location is coarser than the level.
type azChain [4]string

// contains reports whether the location c (a query's) lies in the member location
// (level, id).
func (c *azChain) contains(level azLevel, id string) bool {
	return level == azGlobal || (level >= azZone && level <= azPartition && c[level-1] == id)
}

// String is the most specific location of c, with its type.
func (c *azChain) String() string {
	for i, id := range c {
		if id != "" {
			return azLevel(i+1).String() + " " + id
		}
	}
	return "unknown"
}

// validateAZGroup refuses two members of one group for one location.
func validateAZGroup(parsed *parseState, rs *recordSet, t string, group []*member) error {
	seen := map[azKey]bool{}
	for _, m := range group {
		k := azKey{m.AZLevel, m.AZID}
		if seen[k] {
			return parsed.pos[m].errorf("record %s: location '%s' has a second %s member; azaffinity records have one per location", rs.Name, azKeyString(k), t)
		}
		seen[k] = true
	}
	if !seen[azKey{level: azGlobal}] {
		log.Warningf("record %s: azaffinity %s group has no global member: queries from unknown locations get no answer", rs.Name, t)
	}
	return nil
}

func azKeyString(k azKey) string {
	if k.level == azGlobal {
		return "global"
	}
	return k.level.String() + " " + k.id
}

// azPlan is the routing's view of the location lines: the server's location and the
// client prefixes' locations, each with every location containing it.
type azPlan struct {
	server  *azChain            // nil: unknown
	clients *prefixIndex[int32] // client prefix -> index in chains; nil without client_location
	chains  []azChain
	keys    []azKey // by index in chains: the client_location line's location, for explain
}

// newAZPlan returns the plan of cfg's location lines; nil without any.
func newAZPlan(cfg *blockConfig) *azPlan {
	az := cfg.AZ
	if az == nil {
		return nil
	}
	p := &azPlan{}
	if az.server != nil {
		ch, _ := az.chain(az.server.level, az.server.id) // validated
		p.server = &ch
	}
	for _, cl := range az.clients {
		ch, _ := az.chain(cl.key.level, cl.key.id)
		if p.clients == nil {
			p.clients = &prefixIndex[int32]{}
		}
		for _, b := range cl.blocks {
			p.clients.add(b, int32(len(p.chains)))
		}
		p.chains = append(p.chains, ch)
		p.keys = append(p.keys, cl.key)
	}
	return p
}

// azLocation returns q's location: its client prefix's, else the server's; nil when
// unknown. client is the index of the client_location that placed it, -1 for none.
func (r *resolver) azLocation(q *query) (loc *azChain, client int32) {
	ap := r.plan.az
	if ap == nil {
		return nil, -1
	}
	if ap.clients != nil {
		if i, ok := ap.clients.lookup(q.Client); ok {
			return &ap.chains[i], i
		}
	}
	return ap.server, -1
}

// azRank is how specifically member mn's location contains loc: 0 for its AZ, up to
// 4 for global; -1 when the member does not apply.
func azRank(mn *mnode, loc *azChain) int {
	m := mn.m
	if m.AZLevel == azGlobal {
		return int(azGlobal - azZone)
	}
	if loc == nil || !loc.contains(m.AZLevel, m.AZID) {
		return -1
	}
	return int(m.AZLevel - azZone)
}

// zonalShifts are the zonal shifts of the replicated state that are not
// cancelled, by record set name and AZ ID, with their expiry; nil: none. While one
// is active, its AZ's members answer as unhealthy (docs/arc-api.md#zonal-shift).
var zonalShifts atomic.Pointer[map[shiftKey]time.Time]

type shiftKey struct{ name, az string }

// setZonalShifts replaces zonalShifts with st's.
func setZonalShifts(st *control.State) {
	m := map[shiftKey]time.Time{}
	for _, z := range st.Shifts {
		if !z.Canceled {
			m[shiftKey{z.Resource, z.AwayFrom}] = z.Expiry
		}
	}
	if len(m) == 0 {
		zonalShifts.Store(nil)
		return
	}
	zonalShifts.Store(&m)
}

// shiftedAway reports whether an active zonal shift moves answers away from
// member mn of n's AZ.
func shiftedAway(n *node, mn *mnode) bool {
	m := zonalShifts.Load()
	if m == nil || mn.m.AZLevel != azZone {
		return false
	}
	exp, ok := (*m)[shiftKey{n.set.Name, mn.m.AZID}]
	return ok && time.Now().Before(exp)
}

// azOK reports whether member i of azaffinity node n is healthy for q and not
// shifted away from.
func (r *resolver) azOK(t *table, n *node, i int32, q *query) bool {
	return r.memberOK(t, n, i, q) && !shiftedAway(n, &n.members[i])
}

// pickAZ picks in an azaffinity node for q: the most specific healthy member that
// applies to the query's location; when none is healthy, the most specific one that
// applies; -1 when none applies (NODATA).
func (r *resolver) pickAZ(t *table, n *node, q *query) int32 {
	loc, _ := r.azLocation(q)
	best, bestOK := int32(-1), int32(-1)
	key, keyOK := 0, 0
	for i := range n.members {
		k := azRank(&n.members[i], loc)
		if k < 0 {
			continue
		}
		if best < 0 || k < key {
			best, key = int32(i), k
		}
		if (bestOK < 0 || k < keyOK) && r.azOK(t, n, int32(i), q) {
			bestOK, keyOK = int32(i), k
		}
	}
	if bestOK >= 0 {
		return bestOK
	}
	return best
}

// azHealthy reports whether an azaffinity node has a healthy member that applies to
// q's location.
func (r *resolver) azHealthy(t *table, n *node, q *query) bool {
	loc, _ := r.azLocation(q)
	for i := range n.members {
		if azRank(&n.members[i], loc) >= 0 && r.azOK(t, n, int32(i), q) {
			return true
		}
	}
	return false
}

// azScope is the ECS scope of an azaffinity choice for q: the prefix within which
// every address finds the same client_location (or none, and the server's); 0
// without client_location lines, when every client is at the server's location.
func (r *resolver) azScope(q *query) uint8 {
	if ap := r.plan.az; ap != nil && ap.clients != nil {
		return ap.clients.scope(q.Client)
	}
	return 0
}

// azExplain says where q's location came from, for explain.
func (r *resolver) azExplain(q *query) string {
	loc, client := r.azLocation(q)
	switch {
	case client >= 0:
		ap := r.plan.az
		return fmt.Sprintf("%s (client_location %s: the client %s is in its prefixes)", loc, azKeyString(ap.keys[client]), q.Client)
	case loc != nil:
		return fmt.Sprintf("%s (the server's location line)", loc)
	}
	return "unknown (no location line and no client_location for the client): only global members apply"
}

// azReason says why a healthy azaffinity member that applies to the query was chosen
// or not.
func azReason(mn *mnode, chosen bool) string {
	where := azKeyString(azKey{mn.m.AZLevel, mn.m.AZID})
	if chosen {
		return "chosen: " + where + " is the most specific healthy location that contains the query's"
	}
	return "healthy, not chosen: a more specific location that contains the query's is healthy"
}
