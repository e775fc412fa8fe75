package route53

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// ResourceRecordSet is one record set as the Route 53 API and the aws CLI print it.
type ResourceRecordSet struct {
	Name                    string
	Type                    string
	SetIdentifier           string                `json:",omitempty"`
	Weight                  *int64                `json:",omitempty"`
	Region                  string                `json:",omitempty"`
	GeoLocation             *GeoLocation          `json:",omitempty"`
	Failover                string                `json:",omitempty"`
	MultiValueAnswer        *bool                 `json:",omitempty"`
	TTL                     *int64                `json:",omitempty"`
	ResourceRecords         []ResourceRecord      `json:",omitempty"`
	AliasTarget             *AliasTarget          `json:",omitempty"`
	HealthCheckId           string                `json:",omitempty"`
	TrafficPolicyInstanceId string                `json:",omitempty"`
	CidrRoutingConfig       *CidrRoutingConfig    `json:",omitempty"`
	GeoProximityLocation    *GeoProximityLocation `json:",omitempty"`
	AZAffinity              *AZAffinity           `json:",omitempty"`
}

// ResourceRecord is one value of a record set, in presentation format.
type ResourceRecord struct{ Value string }

// GeoLocation is a geolocation record set's location; CountryCode "*" is the default.
type GeoLocation struct {
	ContinentCode   string `json:",omitempty"`
	CountryCode     string `json:",omitempty"`
	SubdivisionCode string `json:",omitempty"`
}

// AliasTarget is where an alias record set points.
type AliasTarget struct {
	HostedZoneId         string
	DNSName              string
	EvaluateTargetHealth bool
}

// CidrRoutingConfig names the CIDR location of an IP-based record set; LocationName
// "*" is the default.
type CidrRoutingConfig struct {
	CollectionId string
	LocationName string
}

// GeoProximityLocation places a geoproximity record set at an AWS region, a Local
// Zone group or coordinates, with a bias.
type GeoProximityLocation struct {
	AWSRegion      string       `json:",omitempty"`
	LocalZoneGroup string       `json:",omitempty"`
	Coordinates    *Coordinates `json:",omitempty"`
	Bias           *int64       `json:",omitempty"`
}

// Coordinates are a latitude and longitude in decimal degrees, as strings.
type Coordinates struct {
	Latitude  string
	Longitude string
}

// HealthCheck is one health check as list-health-checks and get-health-check print it.
type HealthCheck struct {
	Id                string
	HealthCheckConfig HealthCheckConfig
}

// HealthCheckConfig is a health check's definition.
type HealthCheckConfig struct {
	Type                         string
	IPAddress                    string                         `json:",omitempty"`
	Port                         *int64                         `json:",omitempty"`
	ResourcePath                 string                         `json:",omitempty"`
	FullyQualifiedDomainName     string                         `json:",omitempty"`
	SearchString                 string                         `json:",omitempty"`
	RequestInterval              *int64                         `json:",omitempty"`
	FailureThreshold             *int64                         `json:",omitempty"`
	MeasureLatency               *bool                          `json:",omitempty"`
	Inverted                     bool                           `json:",omitempty"`
	Disabled                     bool                           `json:",omitempty"`
	HealthThreshold              *int64                         `json:",omitempty"`
	ChildHealthChecks            []string                       `json:",omitempty"`
	EnableSNI                    *bool                          `json:",omitempty"`
	Regions                      []string                       `json:",omitempty"`
	AlarmIdentifier              *struct{ Region, Name string } `json:",omitempty"`
	InsufficientDataHealthStatus string                         `json:",omitempty"`
	RoutingControlArn            string                         `json:",omitempty"`
}

// CidrBlock is one block of a CIDR collection location, as list-cidr-blocks prints it.
type CidrBlock struct {
	CidrBlock    string
	LocationName string
}

// ReadRecordSets reads the record sets of list-resource-record-sets output
// ({"ResourceRecordSets": [...]}), of a change batch ({"Changes": [{"Action":
// "CREATE", "ResourceRecordSet": {...}}]}, also wrapped in {"ChangeBatch": ...}), or
// a bare array of record sets. A field this package does not know is an error naming
// the record set: it might change how the record answers.
func ReadRecordSets(r io.Reader) ([]ResourceRecordSet, error) {
	var doc struct {
		ResourceRecordSets []json.RawMessage
		Changes            []json.RawMessage
		ChangeBatch        *struct{ Changes []json.RawMessage }
		IsTruncated        bool
		NextRecordName     string
	}
	var list []json.RawMessage
	array, err := readDoc(r, &list, &doc)
	if err != nil {
		return nil, fmt.Errorf("record sets: %w", err)
	}
	if !array {
		if doc.IsTruncated {
			return nil, fmt.Errorf("record sets: the listing is truncated at %q; list every page (the aws CLI does unless --max-items is given)", doc.NextRecordName)
		}
		if doc.ResourceRecordSets == nil && doc.Changes == nil && doc.ChangeBatch == nil {
			return nil, errors.New("record sets: expected ResourceRecordSets, Changes or ChangeBatch")
		}
		changes := doc.Changes
		if doc.ChangeBatch != nil {
			changes = append(changes, doc.ChangeBatch.Changes...)
		}
		list = doc.ResourceRecordSets
		for i, c := range changes {
			var ch struct {
				Action            string
				ResourceRecordSet json.RawMessage
			}
			if err := json.Unmarshal(c, &ch); err != nil {
				return nil, fmt.Errorf("change %d: %w", i, jsonErr(err))
			}
			if ch.Action != "CREATE" && ch.Action != "UPSERT" {
				return nil, fmt.Errorf("change %d: action %q, expected CREATE or UPSERT (a change batch read as a zone must only add records)", i, ch.Action)
			}
			list = append(list, ch.ResourceRecordSet)
		}
	}
	sets := make([]ResourceRecordSet, len(list))
	// One strict pass over every set; only a failure decodes them one by one, to name
	// the set at fault.
	all := []byte{'['}
	for i, m := range list {
		if i > 0 {
			all = append(all, ',')
		}
		all = append(all, m...)
	}
	all = append(all, ']')
	d := json.NewDecoder(bytes.NewReader(all))
	d.DisallowUnknownFields()
	if len(list) == 0 || d.Decode(&sets) == nil {
		return sets, nil
	}
	clear(sets)
	for i, m := range list {
		d := json.NewDecoder(bytes.NewReader(m))
		d.DisallowUnknownFields()
		if err := d.Decode(&sets[i]); err != nil {
			var id ResourceRecordSet // lenient, only to name the record set
			_ = json.Unmarshal(m, &id)
			return nil, &Error{Name: id.Name, Type: id.Type, SetIdentifier: id.SetIdentifier, Index: i, Err: jsonErr(err)}
		}
	}
	return sets, nil
}

// ReadHealthChecks reads list-health-checks output ({"HealthChecks": [...]}),
// get-health-check output ({"HealthCheck": {...}}) or a bare array of health checks.
func ReadHealthChecks(r io.Reader) ([]HealthCheck, error) {
	var list []json.RawMessage
	var doc struct {
		HealthChecks []json.RawMessage
		HealthCheck  json.RawMessage
		IsTruncated  bool
	}
	array, err := readDoc(r, &list, &doc)
	switch {
	case err != nil:
		return nil, fmt.Errorf("health checks: %w", err)
	case array:
	case doc.IsTruncated:
		return nil, errors.New("health checks: the listing is truncated; list every page")
	case doc.HealthChecks == nil && doc.HealthCheck == nil:
		return nil, errors.New("health checks: expected HealthChecks or HealthCheck")
	default:
		list = doc.HealthChecks
		if doc.HealthCheck != nil {
			list = append(list, doc.HealthCheck)
		}
	}
	checks := make([]HealthCheck, len(list))
	for i, m := range list {
		var hc struct {
			Id                string
			HealthCheckConfig json.RawMessage
		}
		if err := json.Unmarshal(m, &hc); err != nil {
			return nil, fmt.Errorf("health check %d: %w", i, jsonErr(err))
		}
		if hc.Id == "" || hc.HealthCheckConfig == nil {
			return nil, fmt.Errorf("health check %d: expected Id and HealthCheckConfig", i)
		}
		d := json.NewDecoder(bytes.NewReader(hc.HealthCheckConfig))
		d.DisallowUnknownFields()
		checks[i].Id = hc.Id
		if err := d.Decode(&checks[i].HealthCheckConfig); err != nil {
			return nil, fmt.Errorf("health check %s: %w", hc.Id, jsonErr(err))
		}
	}
	return checks, nil
}

// ReadCIDRBlocks reads list-cidr-blocks output ({"CidrBlocks": [...]}) or a bare
// array of blocks: the locations of one CIDR collection.
func ReadCIDRBlocks(r io.Reader) ([]CidrBlock, error) {
	var blocks []CidrBlock
	var doc struct{ CidrBlocks *[]CidrBlock }
	array, err := readDoc(r, &blocks, &doc)
	switch {
	case err != nil:
		return nil, fmt.Errorf("cidr blocks: %w", err)
	case array:
	case doc.CidrBlocks == nil:
		return nil, errors.New("cidr blocks: expected CidrBlocks")
	default:
		blocks = *doc.CidrBlocks
	}
	for i, b := range blocks {
		if b.CidrBlock == "" || b.LocationName == "" {
			return nil, fmt.Errorf("cidr block %d: expected CidrBlock and LocationName", i)
		}
	}
	return blocks, nil
}

// readDoc reads one JSON document from r: a bare array into list, anything else into
// doc. It reports which it was.
func readDoc(r io.Reader, list, doc any) (array bool, err error) {
	raw, err := io.ReadAll(r)
	if err != nil {
		return false, err
	}
	t := bytes.TrimSpace(raw)
	array = len(t) > 0 && t[0] == '['
	if array {
		err = json.Unmarshal(t, list)
	} else {
		err = json.Unmarshal(t, doc)
	}
	return array, jsonErr(err)
}

// jsonErr adds the byte offset to a syntax error, which encoding/json leaves out of
// the message.
func jsonErr(err error) error {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Errorf("malformed JSON at byte %d: %w", se.Offset, err)
	}
	return err
}
