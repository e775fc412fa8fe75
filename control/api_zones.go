package control

import "time"

// Route 53 error codes of the hosted zone calls.
const (
	CodeHostedZoneExists   = "HostedZoneAlreadyExists"
	CodeHostedZoneNotEmpty = "HostedZoneNotEmpty"
)

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
	delete(a.Hosted, name)
	return nil
}

// applyZoneRecords applies a batch, refusing it when it is for a created hosted
// zone that is gone (deleted since the batch was checked).
func (a *APIState) applyZoneRecords(c *APICommand) error {
	if c.Created && a.Hosted[c.Zone] == nil {
		return apiRefusal(CodeNoSuchHostedZone, "No hosted zone found with the name %s", c.Zone)
	}
	return a.applyRecords(c)
}
