package control

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/healthroute/healthroute/route53"
)

// APIResources are the resources the API creates besides record sets and health
// checks: hosted zones and CIDR collections. Each is replaced whole by a change,
// never changed in place, so a clone copies the maps one level.
type APIResources struct {
	Hosted map[string]*APIHostedZone     `json:"hosted,omitempty"` // the hosted zones created through the API, by name
	Cidrs  map[string]*APICidrCollection `json:"cidrs,omitempty"`  // the CIDR collections, by ID
	// Policies are the traffic policies, Instances their instances, by ID.
	Policies  map[string]*APITrafficPolicy  `json:"policies,omitempty"`
	Instances map[string]*APIPolicyInstance `json:"instances,omitempty"`
}

func (r APIResources) clone() APIResources {
	return APIResources{Hosted: maps.Clone(r.Hosted), Cidrs: maps.Clone(r.Cidrs), Policies: maps.Clone(r.Policies), Instances: maps.Clone(r.Instances)}
}

// APIResourceCommand creates, changes or deletes one of APIResources; Created
// marks a batch of record sets (APICommand.Records) for a created hosted zone.
type APIResourceCommand struct {
	Created    bool               `json:"created,omitempty"`
	CreateZone *APIHostedZone     `json:"create_zone,omitempty"` // CreateHostedZone
	DeleteZone string             `json:"delete_zone,omitempty"` // DeleteHostedZone, by name
	CreateCidr *APICidrCollection `json:"create_cidr,omitempty"` // CreateCidrCollection
	ChangeCidr *CidrChange        `json:"change_cidr,omitempty"` // ChangeCidrCollection
	DeleteCidr string             `json:"delete_cidr,omitempty"` // DeleteCidrCollection, by ID
	// CreatePolicy makes a policy (Version 1) or its next version.
	CreatePolicy   *route53.TrafficPolicy `json:"create_policy,omitempty"`
	DeletePolicy   *route53.TrafficPolicy `json:"delete_policy,omitempty"` // Id and Version
	CreateInstance *APIPolicyInstance     `json:"create_instance,omitempty"`
	UpdateInstance *APIPolicyInstance     `json:"update_instance,omitempty"` // TTL and policy version
	DeleteInstance string                 `json:"delete_instance,omitempty"`
	PolicyComment  *route53.TrafficPolicy `json:"policy_comment,omitempty"` // Id, Version and the new Comment
}

// set reports whether c holds a command of its own (Created alone goes with a batch).
func (c *APIResourceCommand) set() bool {
	return c.CreateZone != nil || c.DeleteZone != "" || c.CreateCidr != nil || c.ChangeCidr != nil || c.DeleteCidr != "" ||
		c.CreatePolicy != nil || c.DeletePolicy != nil || c.CreateInstance != nil || c.UpdateInstance != nil || c.DeleteInstance != "" ||
		c.PolicyComment != nil
}

// applyResources applies cmd's resource command to a.
func (a *APIState) applyResources(cmd *APICommand) error {
	c := &cmd.APIResourceCommand
	switch {
	case c.CreateZone != nil:
		return a.createZone(c.CreateZone)
	case c.DeleteZone != "":
		return a.deleteZone(c.DeleteZone)
	case c.CreateCidr != nil:
		return a.createCidr(c.CreateCidr)
	case c.ChangeCidr != nil:
		return a.changeCidr(c.ChangeCidr)
	case c.CreatePolicy != nil:
		return a.createPolicyVersion(c.CreatePolicy)
	case c.DeletePolicy != nil:
		return a.deletePolicyVersion(c.DeletePolicy.Id, c.DeletePolicy.Version)
	case c.CreateInstance != nil:
		return a.putInstance(c.CreateInstance, true, cmd.Reserved)
	case c.UpdateInstance != nil:
		return a.putInstance(c.UpdateInstance, false, cmd.Reserved)
	case c.DeleteInstance != "":
		return a.deleteInstance(c.DeleteInstance, cmd.Reserved)
	case c.PolicyComment != nil:
		return a.commentPolicy(c.PolicyComment)
	}
	return a.deleteCidr(c.DeleteCidr)
}

// Route 53 error codes of the hosted zone calls.
const (
	CodeHostedZoneExists   = "HostedZoneAlreadyExists"
	CodeHostedZoneNotEmpty = "HostedZoneNotEmpty"
	CodeConflictingDomain  = "ConflictingDomainExists"
)

// under reports whether name is zone or below it.
func under(zone, name string) bool {
	return zone == "." || name == zone || strings.HasSuffix(name, "."+zone)
}

// createdBelow returns the hosted zone created through the API below zone that
// holds name, "" when none does: each name is in one hosted zone.
func (a *APIState) createdBelow(zone, name string) string {
	for _, h := range slices.Sorted(maps.Keys(a.Hosted)) {
		if h != zone && under(zone, h) && under(h, name) {
			return h
		}
	}
	return ""
}

// MaxHostedZones is how many hosted zones the API may create (Route 53's default
// quota per account).
const MaxHostedZones = 500

// APIHostedZone is a hosted zone created through the API (CreateHostedZone),
// served by the block whose zones hold its name.
type APIHostedZone struct {
	Name            string    `json:"name"` // fully qualified, lower case
	CallerReference string    `json:"caller_reference"`
	Comment         string    `json:"comment,omitempty"`
	Created         time.Time `json:"created"`
}

// createZone adds a hosted zone; its name and caller reference are each once.
func (a *APIState) createZone(z *APIHostedZone) error {
	for _, have := range a.Hosted {
		if have.CallerReference == z.CallerReference {
			return apiRefusal(CodeHostedZoneExists, "A hosted zone with the caller reference %s already exists (%s)", z.CallerReference, have.Name)
		}
	}
	if a.Hosted[z.Name] != nil {
		return apiRefusal(CodeHostedZoneExists, "A hosted zone named %s already exists", z.Name)
	}
	for _, zone := range slices.Sorted(maps.Keys(a.Zones)) { // decided here, in order, so a racing batch cannot put sets below it
		for _, k := range slices.Sorted(maps.Keys(a.Zones[zone].RecordSets)) {
			if zone != z.Name && under(z.Name, keyName(k)) {
				rs := a.Zones[zone].RecordSets[k].Set()
				return apiRefusal(CodeConflictingDomain, "The hosted zone %s holds record sets at or below %s (%s %s): delete them before creating the zone", zone, z.Name, rs.Name, rs.Type)
			}
		}
	}
	for _, id := range slices.Sorted(maps.Keys(a.Instances)) {
		if in := a.Instances[id]; in.Zone != z.Name && under(z.Name, in.Record.Name) {
			return apiRefusal(CodeConflictingDomain, "The hosted zone %s holds the traffic policy instance %s at %s, below %s: delete it before creating the zone", in.Zone, in.Record.Id, in.Record.Name, z.Name)
		}
	}
	if len(a.Hosted) >= MaxHostedZones {
		return apiRefusal("TooManyHostedZones", "This account holds %d hosted zones, the most it may", MaxHostedZones)
	}
	if a.Hosted == nil {
		a.Hosted = map[string]*APIHostedZone{}
	}
	c := *z
	a.Hosted[z.Name] = &c
	return nil
}

// deleteZone removes a created hosted zone that holds no record set.
func (a *APIState) deleteZone(name string) error {
	if a.Hosted[name] == nil {
		return apiRefusal(CodeNoSuchHostedZone, "No hosted zone found with the name %s", name)
	}
	if z := a.Zones[name]; z != nil && len(z.RecordSets) > 0 {
		return apiRefusal(CodeHostedZoneNotEmpty, "The hosted zone %s contains %d resource record sets other than the default SOA and NS records: delete them first", name, len(z.RecordSets))
	}
	for id, in := range a.Instances {
		if in.Zone == name {
			return apiRefusal(CodeHostedZoneNotEmpty, "The hosted zone %s holds the traffic policy instance %s: delete it first", name, id)
		}
	}
	delete(a.Hosted, name)
	return nil
}

// applyZoneRecords applies a batch, refusing it when it is for a created hosted
// zone that is gone (deleted since the batch was checked), or when it names a
// name of a hosted zone created below its zone (each name is in one hosted zone;
// decided here, in the leader's order, so a batch racing CreateHostedZone
// through another member cannot put sets in both).
func (a *APIState) applyZoneRecords(c *APICommand) error {
	if c.Created && a.Hosted[c.Zone] == nil {
		return apiRefusal(CodeNoSuchHostedZone, "No hosted zone found with the name %s", c.Zone)
	}
	var msgs []string
	for _, ch := range c.Records {
		name := NormalizeName(ch.RecordSet.Name)
		if h := a.createdBelow(c.Zone, name); h != "" {
			msgs = append(msgs, fmt.Sprintf("RRSet with DNS name %s is in the hosted zone %s: change it there", name, h))
		}
	}
	if len(msgs) > 0 {
		return &Refusal{Code: CodeInvalidChangeBatch, Reason: strings.Join(msgs, "\n"), Messages: msgs}
	}
	return a.applyRecords(c)
}
