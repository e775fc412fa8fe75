package routing

import (
	"fmt"
	"sync/atomic"
	"time"
)

// AZ-affinity routing (docs/az-affinity.md): members each for a location, from the
// most specific (an Availability Zone ID) to the least (global); a query gets the
// first healthy member for its own location in that order, the most specific one
// when all are unhealthy, and only a global member when its location is unknown.

// AZLevel is an azaffinity member's location type; a smaller one is more specific.
type AZLevel uint8

// Location types, most specific first.
const (
	AZZone      AZLevel = iota + 1 // an Availability Zone, by AZ ID (use1-az1)
	AZZoneGroup                    // a zone group (us-east-1-zg-1)
	AZRegion                       // a region (us-east-1)
	AZPartition                    // a partition (aws)
	AZGlobal                       // every query, its location known or not
)

var AZLevelNames = [...]string{AZZone: "az", AZZoneGroup: "zone_group", AZRegion: "region", AZPartition: "partition", AZGlobal: "global"}

// String returns the Corefile spelling of l.
func (l AZLevel) String() string {
	if int(l) < len(AZLevelNames) && AZLevelNames[l] != "" {
		return AZLevelNames[l]
	}
	return fmt.Sprintf("azlevel(%d)", uint8(l))
}

// AZChain is a location and every location that contains it: AZ ID, zone group,
// region and partition, by level-1; "" where the location is coarser than the level.
type AZChain [4]string

// contains reports whether the location c (a query's) lies in the member location
// (level, id).
func (c *AZChain) contains(level AZLevel, id string) bool {
	return level == AZGlobal || (level >= AZZone && level <= AZPartition && c[level-1] == id)
}

// String is the most specific location of c, with its type.
func (c *AZChain) String() string {
	for i, id := range c {
		if id != "" {
			return AZLevel(i+1).String() + " " + id
		}
	}
	return "unknown"
}

func AZKeyString(k AZKey) string {
	if k.Level == AZGlobal {
		return "global"
	}
	return k.Level.String() + " " + k.ID
}

// azPlan is the routing's view of the location lines: the server's location and the
// client prefixes' locations, each with every location containing it.
type azPlan struct {
	server  *AZChain            // nil: unknown
	clients *PrefixIndex[int32] // client prefix -> index in chains; nil without client_location
	chains  []AZChain
	keys    []AZKey // by index in chains: the client_location line's location, for explain
}

// newAZPlan returns the plan of cfg's location lines; nil without any.
func newAZPlan(cfg *Config) *azPlan {
	az := cfg.AZ
	if az == nil {
		return nil
	}
	p := &azPlan{}
	if az.Server != nil {
		ch, _ := az.Chain(az.Server.Level, az.Server.ID) // validated
		p.server = &ch
	}
	for _, cl := range az.Clients {
		ch, _ := az.Chain(cl.Key.Level, cl.Key.ID)
		if p.clients == nil {
			p.clients = &PrefixIndex[int32]{}
		}
		for _, b := range cl.Blocks {
			p.clients.Add(b, int32(len(p.chains)))
		}
		p.chains = append(p.chains, ch)
		p.keys = append(p.keys, cl.Key)
	}
	return p
}

// azLocation returns q's location: its client prefix's, else the server's; nil when
// unknown. client is the index of the client_location that placed it, -1 for none.
func (r *Resolver) azLocation(q *Query) (loc *AZChain, client int32) {
	ap := r.Plan.az
	if ap == nil {
		return nil, -1
	}
	if ap.clients != nil {
		if i, ok := ap.clients.Lookup(q.Client); ok {
			return &ap.chains[i], i
		}
	}
	return ap.server, -1
}

// azRank is how specifically member mn's location contains loc: 0 for its AZ, up to
// 4 for global; -1 when the member does not apply.
func azRank(mn *MemberNode, loc *AZChain) int {
	m := mn.Member
	if m.AZLevel == AZGlobal {
		return int(AZGlobal - AZZone)
	}
	if loc == nil || !loc.contains(m.AZLevel, m.AZID) {
		return -1
	}
	return int(m.AZLevel - AZZone)
}

// ShiftKey names what a zonal shift moves answers away from: a record set's
// name and one AZ ID of its members.
type ShiftKey struct{ Name, AZ string }

// zonalShifts are the active zonal shifts of the replicated state, with their
// expiry; nil: none. While one is active, its AZ's members answer as unhealthy
// (docs/arc-api.md#zonal-shift).
var zonalShifts atomic.Pointer[map[ShiftKey]time.Time]

// SetZonalShifts replaces the process's zonal shifts: each key until its expiry.
func SetZonalShifts(m map[ShiftKey]time.Time) {
	if len(m) == 0 {
		zonalShifts.Store(nil)
		return
	}
	zonalShifts.Store(&m)
}

// shiftedAway reports whether an active zonal shift moves answers away from
// member mn of n's AZ.
func shiftedAway(n *Node, mn *MemberNode) bool {
	m := zonalShifts.Load()
	if m == nil || mn.Member.AZLevel != AZZone {
		return false
	}
	exp, ok := (*m)[ShiftKey{n.Set.Name, mn.Member.AZID}]
	return ok && time.Now().Before(exp)
}

// azOK reports whether member i of azaffinity node n is healthy for q and not
// shifted away from.
func (r *Resolver) azOK(t *Table, n *Node, i int32, q *Query) bool {
	return r.memberOK(t, n, i, q) && !shiftedAway(n, &n.Members[i])
}

// pickAZ picks in an azaffinity node for q: the most specific healthy member that
// applies to the query's location; when none is healthy, the most specific one that
// applies; -1 when none applies (NODATA).
func (r *Resolver) pickAZ(t *Table, n *Node, q *Query) int32 {
	loc, _ := r.azLocation(q)
	best, bestOK := int32(-1), int32(-1)
	key, keyOK := 0, 0
	for i := range n.Members {
		k := azRank(&n.Members[i], loc)
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
func (r *Resolver) azHealthy(t *Table, n *Node, q *Query) bool {
	loc, _ := r.azLocation(q)
	for i := range n.Members {
		if azRank(&n.Members[i], loc) >= 0 && r.azOK(t, n, int32(i), q) {
			return true
		}
	}
	return false
}

// azScope is the ECS scope of an azaffinity choice for q: the prefix within which
// every address finds the same client_location (or none, and the server's); 0
// without client_location lines, when every client is at the server's location.
func (r *Resolver) azScope(q *Query) uint8 {
	if ap := r.Plan.az; ap != nil && ap.clients != nil {
		return ap.clients.Scope(q.Client)
	}
	return 0
}

// azExplain says where q's location came from, for explain.
func (r *Resolver) azExplain(q *Query) string {
	loc, client := r.azLocation(q)
	switch {
	case client >= 0:
		ap := r.Plan.az
		return fmt.Sprintf("%s (client_location %s: the client %s is in its prefixes)", loc, AZKeyString(ap.keys[client]), q.Client)
	case loc != nil:
		return fmt.Sprintf("%s (the server's location line)", loc)
	}
	return "unknown (no location line and no client_location for the client): only global members apply"
}

// azReason says why a healthy azaffinity member that applies to the query was chosen
// or not.
func azReason(mn *MemberNode, chosen bool) string {
	where := AZKeyString(AZKey{mn.Member.AZLevel, mn.Member.AZID})
	if chosen {
		return "chosen: " + where + " is the most specific healthy location that contains the query's"
	}
	return "healthy, not chosen: a more specific location that contains the query's is healthy"
}
