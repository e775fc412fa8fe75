package route53

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// ResourceRecordSet is one record set as the Route 53 API and the aws CLI print it.
type ResourceRecordSet struct {
	Name                    string
	Type                    string
	SetIdentifier           string                `json:",omitempty" xml:",omitempty"`
	Weight                  *int64                `json:",omitempty" xml:",omitempty"`
	Region                  string                `json:",omitempty" xml:",omitempty"`
	GeoLocation             *GeoLocation          `json:",omitempty" xml:",omitempty"`
	Failover                string                `json:",omitempty" xml:",omitempty"`
	MultiValueAnswer        *bool                 `json:",omitempty" xml:",omitempty"`
	TTL                     *int64                `json:",omitempty" xml:",omitempty"`
	ResourceRecords         []ResourceRecord      `json:",omitempty" xml:"ResourceRecords>ResourceRecord,omitempty"`
	AliasTarget             *AliasTarget          `json:",omitempty" xml:",omitempty"`
	HealthCheckId           string                `json:",omitempty" xml:",omitempty"`
	TrafficPolicyInstanceId string                `json:",omitempty" xml:",omitempty"`
	CidrRoutingConfig       *CidrRoutingConfig    `json:",omitempty" xml:",omitempty"`
	GeoProximityLocation    *GeoProximityLocation `json:",omitempty" xml:",omitempty"`
	AZAffinity              *AZAffinity           `json:",omitempty" xml:",omitempty"`
}

// ResourceRecord is one value of a record set, in presentation format.
type ResourceRecord struct{ Value string }

// GeoLocation is a geolocation record set's location; CountryCode "*" is the default.
type GeoLocation struct {
	ContinentCode   string `json:",omitempty" xml:",omitempty"`
	CountryCode     string `json:",omitempty" xml:",omitempty"`
	SubdivisionCode string `json:",omitempty" xml:",omitempty"`
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
	AWSRegion      string       `json:",omitempty" xml:",omitempty"`
	LocalZoneGroup string       `json:",omitempty" xml:",omitempty"`
	Coordinates    *Coordinates `json:",omitempty" xml:",omitempty"`
	Bias           *int64       `json:",omitempty" xml:",omitempty"`
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
	IPAddress                    string                         `json:",omitempty" xml:",omitempty"`
	Port                         *int64                         `json:",omitempty" xml:",omitempty"`
	ResourcePath                 string                         `json:",omitempty" xml:",omitempty"`
	FullyQualifiedDomainName     string                         `json:",omitempty" xml:",omitempty"`
	SearchString                 string                         `json:",omitempty" xml:",omitempty"`
	RequestInterval              *int64                         `json:",omitempty" xml:",omitempty"`
	FailureThreshold             *int64                         `json:",omitempty" xml:",omitempty"`
	MeasureLatency               *bool                          `json:",omitempty" xml:",omitempty"`
	Inverted                     bool                           `json:",omitempty" xml:",omitempty"`
	Disabled                     bool                           `json:",omitempty" xml:",omitempty"`
	HealthThreshold              *int64                         `json:",omitempty" xml:",omitempty"`
	ChildHealthChecks            []string                       `json:",omitempty" xml:"ChildHealthChecks>ChildHealthCheck,omitempty"`
	EnableSNI                    *bool                          `json:",omitempty" xml:",omitempty"`
	Regions                      []string                       `json:",omitempty" xml:"Regions>Region,omitempty"`
	AlarmIdentifier              *struct{ Region, Name string } `json:",omitempty" xml:",omitempty"`
	InsufficientDataHealthStatus string                         `json:",omitempty" xml:",omitempty"`
	RoutingControlArn            string                         `json:",omitempty" xml:",omitempty"`
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
// the record set: it might change how the record answers. The document is read as
// a stream (see openDoc): a file that is not such a document is refused at the
// first token that shows it.
func ReadRecordSets(r io.Reader) ([]ResourceRecordSet, error) {
	rs := &setReader{d: json.NewDecoder(r)}
	err := rs.read()
	var ee elemError
	switch {
	case errors.As(err, &ee):
		return nil, ee.err
	case err != nil:
		return nil, fmt.Errorf("record sets: %w", err)
	}
	return rs.sets, nil
}

// setReader reads a document of record sets.
type setReader struct {
	d       *json.Decoder
	sets    []ResourceRecordSet
	changes int // change entries read
}

func (s *setReader) read() error {
	array, err := openDoc(s.d)
	if err != nil {
		return err
	}
	if array {
		if err := eachElem(s.d, s.add); err != nil {
			return err
		}
		return closeDoc(s.d)
	}
	var found, truncated bool
	var next string
	err = eachMember(s.d, func(key string) error {
		switch {
		case is(key, "ResourceRecordSets"):
			return s.list(key, s.add, &found)
		case is(key, "Changes"):
			return s.list(key, s.change, &found)
		case is(key, "ChangeBatch"):
			return s.batch(&found)
		case is(key, "IsTruncated"):
			return decode(s.d, &truncated)
		case is(key, "NextRecordName"):
			return decode(s.d, &next)
		}
		return skipValue(s.d)
	})
	if err != nil {
		return err
	}
	if err := closeDoc(s.d); err != nil {
		return err
	}
	if truncated {
		return fmt.Errorf("the listing is truncated at %q; list every page (the aws CLI does unless --max-items is given)", next)
	}
	if !found {
		return errors.New("expected ResourceRecordSets, Changes or ChangeBatch")
	}
	return nil
}

// list reads the array of member key with f; found notes that it was not null.
func (s *setReader) list(key string, f func(json.RawMessage) error, found *bool) error {
	ok, err := openArray(s.d, key)
	if err != nil || !ok {
		return err
	}
	*found = true
	return eachElem(s.d, f)
}

// batch reads a ChangeBatch object, whose Changes are read as a change batch's.
func (s *setReader) batch(found *bool) error {
	tok, err := s.d.Token()
	if err != nil {
		return jsonErr(err)
	}
	if tok == nil {
		return nil
	}
	if tok != json.Delim('{') {
		return fmt.Errorf("ChangeBatch: expected an object, found %s", describe(tok))
	}
	*found = true
	var none bool
	return eachMember(s.d, func(key string) error {
		if is(key, "Changes") {
			return s.list(key, s.change, &none)
		}
		return skipValue(s.d)
	})
}

// add decodes one record set, strictly.
func (s *setReader) add(m json.RawMessage) error {
	var set ResourceRecordSet
	if err := decodeStrict(m, &set); err != nil {
		var id ResourceRecordSet // lenient, only to name the record set
		_ = json.Unmarshal(m, &id)
		return &Error{Name: id.Name, Type: id.Type, SetIdentifier: id.SetIdentifier, Index: len(s.sets), Err: jsonErr(err)}
	}
	s.sets = append(s.sets, set)
	return nil
}

// change reads one change of a batch, which must add its record set.
func (s *setReader) change(m json.RawMessage) error {
	i := s.changes
	s.changes++
	var ch struct {
		Action            string
		ResourceRecordSet json.RawMessage
	}
	if err := json.Unmarshal(m, &ch); err != nil {
		return fmt.Errorf("change %d: %w", i, jsonErr(err))
	}
	if ch.Action != "CREATE" && ch.Action != "UPSERT" {
		return fmt.Errorf("change %d: action %q, expected CREATE or UPSERT (a change batch read as a zone must only add records)", i, ch.Action)
	}
	return s.add(ch.ResourceRecordSet)
}

// ReadHealthChecks reads list-health-checks output ({"HealthChecks": [...]}),
// get-health-check output ({"HealthCheck": {...}}) or a bare array of health
// checks, as a stream (see ReadRecordSets).
func ReadHealthChecks(r io.Reader) ([]HealthCheck, error) {
	var checks []HealthCheck
	add := func(m json.RawMessage) error {
		hc, err := healthCheck(m, len(checks))
		if err != nil {
			return err
		}
		checks = append(checks, hc)
		return nil
	}
	var found, truncated bool
	member := func(d *json.Decoder, key string) error {
		switch {
		case is(key, "HealthChecks"):
			ok, err := openArray(d, key)
			if err != nil || !ok {
				return err
			}
			found = true
			return eachElem(d, add)
		case is(key, "HealthCheck"):
			var m json.RawMessage
			if err := decode(d, &m); err != nil {
				return err
			}
			if string(m) == "null" {
				return nil
			}
			found = true
			if err := add(m); err != nil {
				return elemError{err}
			}
			return nil
		case is(key, "IsTruncated"):
			return decode(d, &truncated)
		}
		return skipValue(d)
	}
	whole := func() error {
		if truncated {
			return errors.New("the listing is truncated; list every page")
		}
		if !found {
			return errors.New("expected HealthChecks or HealthCheck")
		}
		return nil
	}
	if err := readList(r, "health checks", add, member, whole); err != nil {
		return nil, err
	}
	return checks, nil
}

// healthCheck decodes the i-th health check of a listing; its configuration strictly.
func healthCheck(m json.RawMessage, i int) (HealthCheck, error) {
	var hc struct {
		Id                string
		HealthCheckConfig json.RawMessage
	}
	if err := json.Unmarshal(m, &hc); err != nil {
		return HealthCheck{}, fmt.Errorf("health check %d: %w", i, jsonErr(err))
	}
	if hc.Id == "" || hc.HealthCheckConfig == nil {
		return HealthCheck{}, fmt.Errorf("health check %d: expected Id and HealthCheckConfig", i)
	}
	out := HealthCheck{Id: hc.Id}
	if err := decodeStrict(hc.HealthCheckConfig, &out.HealthCheckConfig); err != nil {
		return HealthCheck{}, fmt.Errorf("health check %s: %w", hc.Id, jsonErr(err))
	}
	return out, nil
}

// ReadCIDRBlocks reads list-cidr-blocks output ({"CidrBlocks": [...]}) or a bare
// array of blocks, as a stream (see ReadRecordSets).
func ReadCIDRBlocks(r io.Reader) ([]CidrBlock, error) {
	var blocks []CidrBlock
	add := func(m json.RawMessage) error {
		var b CidrBlock
		if err := json.Unmarshal(m, &b); err != nil {
			return fmt.Errorf("cidr block %d: %w", len(blocks), jsonErr(err))
		}
		if b.CidrBlock == "" || b.LocationName == "" {
			return fmt.Errorf("cidr block %d: expected CidrBlock and LocationName", len(blocks))
		}
		blocks = append(blocks, b)
		return nil
	}
	found := false
	member := func(d *json.Decoder, key string) error {
		if !is(key, "CidrBlocks") {
			return skipValue(d)
		}
		ok, err := openArray(d, key)
		if err != nil || !ok {
			return err
		}
		found = true
		return eachElem(d, add)
	}
	whole := func() error {
		if !found {
			return errors.New("expected CidrBlocks")
		}
		return nil
	}
	if err := readList(r, "cidr blocks", add, member, whole); err != nil {
		return nil, err
	}
	return blocks, nil
}

// readList reads a listing from r: a bare array whose elements go to add, or an
// object whose members member reads, after which whole says whether the listing is
// complete; nothing may follow the document. An error of add comes back as it is;
// any other one is prefixed with what.
func readList(r io.Reader, what string, add func(json.RawMessage) error, member func(d *json.Decoder, key string) error, whole func() error) error {
	d := json.NewDecoder(r)
	err := func() error {
		array, err := openDoc(d)
		if err != nil {
			return err
		}
		if array {
			err = eachElem(d, add)
		} else {
			err = eachMember(d, func(key string) error { return member(d, key) })
		}
		if err != nil {
			return err
		}
		if err := closeDoc(d); err != nil {
			return err
		}
		if array {
			return nil
		}
		return whole()
	}()
	var ee elemError
	switch {
	case errors.As(err, &ee):
		return ee.err
	case err != nil:
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
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
