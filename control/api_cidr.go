package control

import (
	"maps"
	"slices"

	"github.com/healthroute/healthroute/route53"
)

// Route 53 error codes of the CIDR collection calls.
const (
	CodeNoSuchCidrCollection   = "NoSuchCidrCollectionException"
	CodeCidrCollectionExists   = "CidrCollectionAlreadyExistsException"
	CodeCidrCollectionVersion  = "CidrCollectionVersionMismatchException"
	CodeCidrCollectionInUse    = "CidrCollectionInUseException"
	CodeNoSuchCidrLocation     = "NoSuchCidrLocationException"
	CodeCidrBlockInUse         = "CidrBlockInUseException"
	CodeTooManyCidrCollections = "LimitsExceeded"
)

// Route 53's default quotas of CIDR collections per account and blocks per collection.
const (
	MaxCidrCollections = 5
	MaxCidrBlocks      = 1000
)

// APICidrCollection is a CIDR collection (CreateCidrCollection): the blocks of
// each location, which IP-based record sets name by CidrRoutingConfig. A
// collection is replaced whole by each change, never changed in place.
type APICidrCollection struct {
	Id              string              `json:"id"`
	Name            string              `json:"name"`
	CallerReference string              `json:"caller_reference"`
	Version         int64               `json:"version"`
	Locations       map[string][]string `json:"locations,omitempty"` // location -> blocks, sorted
}

// CidrChange is a ChangeCidrCollection call: Version, when not 0, must be the
// collection's.
type CidrChange struct {
	Id      string               `json:"id"`
	Version int64                `json:"version,omitempty"`
	Changes []CidrLocationChange `json:"changes"`
}

// CidrLocationChange puts blocks into a location, or deletes them from it
// (DELETE_IF_EXISTS); a location left without blocks is gone.
type CidrLocationChange struct {
	Location string   `json:"location"`
	Action   string   `json:"action"` // PUT or DELETE_IF_EXISTS
	Blocks   []string `json:"blocks"`
}

// CIDRBlocks returns the collections' blocks as the importer reads them.
func (a *APIState) CIDRBlocks() map[string][]route53.CidrBlock {
	if a == nil || len(a.Cidrs) == 0 {
		return nil
	}
	out := make(map[string][]route53.CidrBlock, len(a.Cidrs))
	for id, c := range a.Cidrs {
		out[id] = []route53.CidrBlock{}
		for _, loc := range slices.Sorted(maps.Keys(c.Locations)) {
			for _, b := range c.Locations[loc] {
				out[id] = append(out[id], route53.CidrBlock{CidrBlock: b, LocationName: loc})
			}
		}
	}
	return out
}

func (a *APIState) createCidr(c *APICidrCollection) error {
	for _, have := range a.Cidrs {
		if have.Name == c.Name || have.CallerReference == c.CallerReference {
			return apiRefusal(CodeCidrCollectionExists, "A CIDR collection with the name %s or the caller reference %s already exists (%s)", c.Name, c.CallerReference, have.Id)
		}
	}
	if len(a.Cidrs) >= MaxCidrCollections {
		return apiRefusal(CodeTooManyCidrCollections, "This account holds %d CIDR collections, the most it may", MaxCidrCollections)
	}
	if a.Cidrs == nil {
		a.Cidrs = map[string]*APICidrCollection{}
	}
	n := *c
	n.Version, n.Locations = 1, nil
	a.Cidrs[n.Id] = &n
	return nil
}

func (a *APIState) changeCidr(ch *CidrChange) error {
	have := a.Cidrs[ch.Id]
	if have == nil {
		return apiRefusal(CodeNoSuchCidrCollection, "No CIDR collection exists with the ID %s", ch.Id)
	}
	if ch.Version != 0 && ch.Version != have.Version {
		return apiRefusal(CodeCidrCollectionVersion, "The CIDR collection %s is at version %d, not %d", ch.Id, have.Version, ch.Version)
	}
	n := *have
	n.Version++
	n.Locations = maps.Clone(have.Locations)
	if n.Locations == nil {
		n.Locations = map[string][]string{}
	}
	owner := map[string]string{} // block -> location: a block is in one location
	for loc, bs := range n.Locations {
		for _, b := range bs {
			owner[b] = loc
		}
	}
	for _, c := range ch.Changes {
		bs := slices.Clone(n.Locations[c.Location])
		for _, b := range c.Blocks {
			switch {
			case c.Action == "PUT" && owner[b] != "" && owner[b] != c.Location:
				return apiRefusal(CodeInvalidInput, "The CIDR block %s is in the location %s of collection %s already", b, owner[b], ch.Id)
			case c.Action == "PUT" && owner[b] == "":
				bs, owner[b] = append(bs, b), c.Location
			case c.Action == "DELETE_IF_EXISTS" && owner[b] == c.Location:
				bs = slices.DeleteFunc(bs, func(x string) bool { return x == b })
				delete(owner, b)
			}
		}
		if len(bs) == 0 {
			if a.cidrInUse(ch.Id, c.Location) {
				return apiRefusal(CodeCidrBlockInUse, "The location %s of collection %s would have no block, and a record set uses it", c.Location, ch.Id)
			}
			delete(n.Locations, c.Location)
			continue
		}
		slices.Sort(bs)
		n.Locations[c.Location] = bs
	}
	if len(owner) > MaxCidrBlocks {
		return apiRefusal(CodeTooManyCidrCollections, "The CIDR collection %s would hold %d blocks, at most %d", ch.Id, len(owner), MaxCidrBlocks)
	}
	a.Cidrs[ch.Id] = &n
	return nil
}

func (a *APIState) deleteCidr(id string) error {
	c := a.Cidrs[id]
	if c == nil {
		return apiRefusal(CodeNoSuchCidrCollection, "No CIDR collection exists with the ID %s", id)
	}
	if len(c.Locations) > 0 {
		return apiRefusal(CodeCidrCollectionInUse, "The CIDR collection %s still holds locations: delete their blocks first", id)
	}
	if a.cidrInUse(id, "") {
		return apiRefusal(CodeCidrCollectionInUse, "A record set uses the CIDR collection %s", id)
	}
	delete(a.Cidrs, id)
	return nil
}

// cidrInUse reports whether a record set names collection id (and location loc,
// unless loc is "").
func (a *APIState) cidrInUse(id, loc string) bool {
	for _, z := range a.Zones {
		for _, s := range z.RecordSets {
			if !s.has("CidrRoutingConfig") {
				continue
			}
			if cr := s.Set().CidrRoutingConfig; cr != nil && cr.CollectionId == id && (loc == "" || cr.LocationName == loc) {
				return true
			}
		}
	}
	return false
}
