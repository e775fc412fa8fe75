package control

import (
	"maps"
	"slices"

	"github.com/healthroute/healthroute/route53"
)

// Route 53 error codes of the traffic policy calls.
const (
	CodeNoSuchTrafficPolicy         = "NoSuchTrafficPolicy"
	CodeNoSuchTrafficPolicyInstance = "NoSuchTrafficPolicyInstance"
	CodeTrafficPolicyInUse          = "TrafficPolicyInUse"
	CodeTrafficPolicyInstanceExists = "TrafficPolicyInstanceAlreadyExists"
	CodeTooManyTrafficPolicies      = "TooManyTrafficPolicies"
)

// Route 53's default quotas: policies per account, versions per policy, instances.
const (
	MaxTrafficPolicies        = 50
	MaxTrafficPolicyVersions  = 1000
	MaxTrafficPolicyInstances = 5
)

// APITrafficPolicy is a traffic policy made through the API, with its versions
// (by number; a deleted one is gone, the numbers are not used again).
type APITrafficPolicy struct {
	Id       string                        `json:"id"`
	Name     string                        `json:"name"`
	Type     string                        `json:"type"`
	Latest   int                           `json:"latest"` // the highest version made
	Versions map[int]route53.TrafficPolicy `json:"versions"`
}

// APIPolicyInstance is a traffic policy instance (a policy record): a name and
// TTL of a zone bound to a policy version.
type APIPolicyInstance struct {
	Zone   string               `json:"zone"`
	Record route53.PolicyRecord `json:"record"`
}

// TrafficPolicies returns every version of every policy, as the importer reads them.
func (a *APIState) TrafficPolicies() []route53.TrafficPolicy {
	var out []route53.TrafficPolicy
	for _, id := range slices.Sorted(maps.Keys(a.Policies)) {
		p := a.Policies[id]
		for _, v := range slices.Sorted(maps.Keys(p.Versions)) {
			out = append(out, p.Versions[v])
		}
	}
	return out
}

// PolicyRecords returns the instances of zone, as the importer reads them.
func (a *APIState) PolicyRecords(zone string) []route53.PolicyRecord {
	var out []route53.PolicyRecord
	for _, id := range slices.Sorted(maps.Keys(a.Instances)) {
		if in := a.Instances[id]; in.Zone == zone {
			out = append(out, in.Record)
		}
	}
	return out
}

// createPolicyVersion makes policy tp.Id (tp.Version 1, a new policy) or its next
// version, tp.Version, which must follow the highest made.
func (a *APIState) createPolicyVersion(tp *route53.TrafficPolicy) error {
	have := a.Policies[tp.Id]
	var p APITrafficPolicy
	switch {
	case tp.Version == 1 && have != nil:
		return apiRefusal("TrafficPolicyAlreadyExists", "A traffic policy with the ID %s already exists", tp.Id)
	case tp.Version == 1:
		for _, o := range a.Policies {
			if o.Name == tp.Name {
				return apiRefusal("TrafficPolicyAlreadyExists", "A traffic policy named %s already exists (%s)", tp.Name, o.Id)
			}
		}
		if len(a.Policies) >= MaxTrafficPolicies {
			return apiRefusal(CodeTooManyTrafficPolicies, "This account holds %d traffic policies, the most it may", MaxTrafficPolicies)
		}
		p = APITrafficPolicy{Id: tp.Id, Name: tp.Name, Type: tp.Type}
	case have == nil:
		return apiRefusal(CodeNoSuchTrafficPolicy, "No traffic policy exists with the ID %s", tp.Id)
	case len(have.Versions) >= MaxTrafficPolicyVersions:
		return apiRefusal("TooManyTrafficPolicyVersionsForCurrentPolicy", "The traffic policy %s has %d versions, the most it may", tp.Id, MaxTrafficPolicyVersions)
	case tp.Version != have.Latest+1:
		return apiRefusal("ConcurrentModification", "Another version of the traffic policy %s was made meanwhile: try again", tp.Id)
	case tp.Type != have.Type:
		return apiRefusal("InvalidTrafficPolicyDocument", "The document's RecordType %s is not the policy's, %s", tp.Type, have.Type)
	default:
		p = *have
	}
	p.Latest = tp.Version
	p.Versions = maps.Clone(p.Versions)
	if p.Versions == nil {
		p.Versions = map[int]route53.TrafficPolicy{}
	}
	v := *tp
	v.Name = p.Name
	p.Versions[v.Version] = v
	if a.Policies == nil {
		a.Policies = map[string]*APITrafficPolicy{}
	}
	a.Policies[p.Id] = &p
	return nil
}

func (a *APIState) deletePolicyVersion(id string, version int) error {
	have := a.Policies[id]
	if have == nil {
		return apiRefusal(CodeNoSuchTrafficPolicy, "No traffic policy exists with the ID %s", id)
	}
	if _, ok := have.Versions[version]; !ok {
		return apiRefusal(CodeNoSuchTrafficPolicy, "The traffic policy %s has no version %d", id, version)
	}
	for iid, in := range a.Instances {
		if in.Record.TrafficPolicyId == id && in.Record.TrafficPolicyVersion == version {
			return apiRefusal(CodeTrafficPolicyInUse, "The traffic policy instance %s uses version %d of the traffic policy %s", iid, version, id)
		}
	}
	p := *have
	p.Versions = maps.Clone(p.Versions)
	delete(p.Versions, version)
	if len(p.Versions) == 0 {
		delete(a.Policies, id)
		return nil
	}
	a.Policies[id] = &p
	return nil
}

// putInstance creates an instance (create) or changes one's TTL and policy
// version; its policy version must exist, its name be once in its zone.
//
// The zone must convert after it, its policy records with the record sets they
// meet (convertInstance): decided here, in the leader's order, so an instance
// and a batch racing through two members cannot together break the zone.
func (a *APIState) putInstance(in *APIPolicyInstance, create bool, reserved []string) error {
	r := in.Record
	have := a.Instances[r.Id]
	switch {
	case create && have != nil:
		return apiRefusal(CodeTrafficPolicyInstanceExists, "A traffic policy instance with the ID %s already exists", r.Id)
	case !create && have == nil:
		return apiRefusal(CodeNoSuchTrafficPolicyInstance, "No traffic policy instance exists with the ID %s", r.Id)
	case create && len(a.Instances) >= MaxTrafficPolicyInstances:
		return apiRefusal("TooManyTrafficPolicyInstances", "This account holds %d traffic policy instances, the most it may", MaxTrafficPolicyInstances)
	}
	p := a.Policies[r.TrafficPolicyId]
	if p == nil {
		return apiRefusal(CodeNoSuchTrafficPolicy, "No traffic policy exists with the ID %s", r.TrafficPolicyId)
	}
	if _, ok := p.Versions[r.TrafficPolicyVersion]; !ok {
		return apiRefusal(CodeNoSuchTrafficPolicy, "The traffic policy %s has no version %d", r.TrafficPolicyId, r.TrafficPolicyVersion)
	}
	if create {
		for _, o := range a.Instances {
			if o.Zone == in.Zone && o.Record.Name == r.Name {
				return apiRefusal(CodeTrafficPolicyInstanceExists, "The traffic policy instance %s already has the name %s", o.Record.Id, r.Name)
			}
		}
	} else {
		in.Zone, r.Name, r.HostedZoneId = have.Zone, have.Record.Name, have.Record.HostedZoneId
	}
	r.TrafficPolicyType, r.State = p.Type, "Applied"
	if a.Instances == nil {
		a.Instances = map[string]*APIPolicyInstance{}
	}
	if create && a.createdBelow(in.Zone, r.Name) != "" {
		return apiRefusal(CodeInvalidInput, "The name %s is in the hosted zone %s: create the instance there", r.Name, a.createdBelow(in.Zone, r.Name))
	}
	if a.Instances == nil {
		a.Instances = map[string]*APIPolicyInstance{}
	}
	a.Instances[r.Id] = &APIPolicyInstance{Zone: in.Zone, Record: r}
	return a.convertInstance(in.Zone, r.Name, reserved)
}

func (a *APIState) deleteInstance(id string, reserved []string) error {
	in := a.Instances[id]
	if in == nil {
		return apiRefusal(CodeNoSuchTrafficPolicyInstance, "No traffic policy instance exists with the ID %s", id)
	}
	delete(a.Instances, id)
	return a.convertInstance(in.Zone, in.Record.Name, reserved)
}

// convertInstance refuses an instance command after which zone would not
// convert: the record sets at the instance's name and those joined to them by
// aliases, with the zone's policy records (convert).
func (a *APIState) convertInstance(zone, name string, reserved []string) error {
	var held map[string]StoredSet
	if z := a.Zones[zone]; z != nil {
		held = z.RecordSets
	}
	sets := affected(held, held, []RecordChange{{RecordSet: route53.ResourceRecordSet{Name: name}}})
	if err := a.convert(zone, sets, reserved); err != nil {
		return &Refusal{Code: CodeInvalidChangeBatch, Reason: err.Error(), Messages: []string{err.Error()}}
	}
	return nil
}

// commentPolicy sets the comment of a policy version.
func (a *APIState) commentPolicy(tp *route53.TrafficPolicy) error {
	have := a.Policies[tp.Id]
	if have == nil {
		return apiRefusal(CodeNoSuchTrafficPolicy, "No traffic policy exists with the ID %s", tp.Id)
	}
	v, ok := have.Versions[tp.Version]
	if !ok {
		return apiRefusal(CodeNoSuchTrafficPolicy, "The traffic policy %s has no version %d", tp.Id, tp.Version)
	}
	p := *have
	p.Versions = maps.Clone(p.Versions)
	v.Comment = tp.Comment
	p.Versions[tp.Version] = v
	a.Policies[tp.Id] = &p
	return nil
}
