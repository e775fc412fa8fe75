package route53

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// Traffic Flow (docs/traffic-flow.md): a traffic policy document is a tree of rules
// over endpoints, and a policy record binds it to a name and a TTL. Each rule becomes
// the record sets Route 53 would create for it, one per rule item, at a name of its
// own below the policy record's name (the start rule at the name itself), and each
// reference to another rule an alias to that name: the project's own alias tree, read
// by the rest of the converter as any record set.

// policyDoc is a traffic policy document; Endpoints and Rules are decoded one by one,
// strictly, so that an error names the endpoint or rule.
type policyDoc struct {
	AWSPolicyFormatVersion string
	RecordType             string
	StartRule              string `json:",omitempty"`
	StartEndpoint          string `json:",omitempty"`
	Endpoints              map[string]json.RawMessage
	Rules                  map[string]json.RawMessage `json:",omitempty"`
}

type tfEndpoint struct {
	Type   string
	Value  string
	Region string `json:",omitempty"` // s3-website
}

type tfRule struct {
	RuleType              string
	Primary, Secondary    *tfItem   `json:",omitempty"` // failover
	Locations             []*tfItem `json:",omitempty"` // geo
	Regions               []*tfItem `json:",omitempty"` // latency
	GeoproximityLocations []*tfItem `json:",omitempty"` // geoproximity
	Items                 []*tfItem `json:",omitempty"` // multivalue, weighted
}

// tfItem is one place a rule routes to: an endpoint or a rule, with the keys of the
// rule's type.
type tfItem struct {
	EndpointReference    string    `json:",omitempty"`
	RuleReference        string    `json:",omitempty"`
	EvaluateTargetHealth *flexBool `json:",omitempty"`
	HealthCheck          string    `json:",omitempty"`
	IsDefault            *flexBool `json:",omitempty"` // geo
	Continent            string    `json:",omitempty"`
	Country              string    `json:",omitempty"`
	Subdivision          string    `json:",omitempty"`
	Region               string    `json:",omitempty"` // latency; geoproximity as aws:route53:REGION
	Latitude             flexNum   `json:",omitempty"` // geoproximity (2015-10-01)
	Longitude            flexNum   `json:",omitempty"`
	Location             *tfPlace  `json:",omitempty"` // geoproximity (2023-05-09)
	Bias                 flexNum   `json:",omitempty"`
	Weight               flexNum   `json:",omitempty"` // weighted
}

// tfPlace is a geoproximity item's Location in the 2023-05-09 format: a Region or a
// LocalZone by LocationName (aws:route53:NAME), or a Coordinate.
type tfPlace struct {
	Type                string
	LocationName        string  `json:",omitempty"`
	Latitude, Longitude flexNum `json:",omitempty"`
}

// flexBool is a JSON boolean, also written as the string "true" or "false" (the
// document format's reference quotes them).
type flexBool bool

func (b *flexBool) UnmarshalJSON(p []byte) error {
	switch strings.Trim(string(p), `"`) {
	case "true":
		*b = true
	case "false":
		*b = false
	default:
		return fmt.Errorf("%s is not true or false", p)
	}
	return nil
}

// flexNum is a JSON number, also written as a string; "" when absent.
type flexNum string

func (n *flexNum) UnmarshalJSON(p []byte) error {
	s := strings.Trim(string(p), `"`)
	if _, err := strconv.ParseFloat(s, 64); err != nil {
		return fmt.Errorf("%s is not a number", p)
	}
	*n = flexNum(s)
	return nil
}

// PolicyError is a traffic policy document that cannot be converted: it names the
// policy record, the policy, and the rule or endpoint at fault.
type PolicyError struct {
	Record, Policy string // the policy record's name; the policy's ID and version
	Rule, Endpoint string // at most one set
	Err            error
}

func (e *PolicyError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "policy record %s (traffic policy %s)", e.Record, e.Policy)
	switch {
	case e.Rule != "":
		fmt.Fprintf(&b, ", rule %q", e.Rule)
	case e.Endpoint != "":
		fmt.Fprintf(&b, ", endpoint %q", e.Endpoint)
	}
	return b.String() + ": " + e.Err.Error()
}

func (e *PolicyError) Unwrap() error { return e.Err }

// tfOrigin is where a record set made from a document came from, for errors.
type tfOrigin struct {
	record, policy, rule, endpoint string
}

// tfBuild turns one policy record and its document into record sets.
type tfBuild struct {
	pr      *PolicyRecord
	policy  string // ID:VERSION
	name    string // the policy record's name, normalized
	doc     policyDoc
	rules   map[string]*tfRule
	eps     map[string]*tfEndpoint
	names   map[string]string // rule ID -> its record sets' name
	taken   map[string]bool   // the names in names
	built   map[string]bool   // rules whose record sets are made
	sets    []ResourceRecordSet
	origins []tfOrigin
}

func (b *tfBuild) fail(rule, endpoint string, format string, args ...any) error {
	return &PolicyError{Record: b.pr.Name, Policy: b.policy, Rule: rule, Endpoint: endpoint, Err: fmt.Errorf(format, args...)}
}

// policyRecordSets returns the record sets every policy record makes, with where each
// came from, and the IDs of the policy records (whose own record sets in a zone
// listing are left out: these replace them).
func policyRecordSets(in *Input) ([]ResourceRecordSet, []tfOrigin, map[string]bool, error) {
	policies := map[string]*TrafficPolicy{}
	for i := range in.TrafficPolicies {
		p := &in.TrafficPolicies[i]
		k := p.Id + ":" + strconv.Itoa(p.Version)
		if _, dup := policies[k]; dup {
			return nil, nil, nil, fmt.Errorf("traffic policy %s version %d: given twice", p.Id, p.Version)
		}
		policies[k] = p
	}
	var sets []ResourceRecordSet
	var origins []tfOrigin
	instances := map[string]bool{}
	for i := range in.PolicyRecords {
		pr := &in.PolicyRecords[i]
		k := pr.TrafficPolicyId + ":" + strconv.Itoa(pr.TrafficPolicyVersion)
		b := &tfBuild{pr: pr, policy: k, names: map[string]string{}, taken: map[string]bool{}, built: map[string]bool{}}
		p, ok := policies[k]
		if !ok {
			return nil, nil, nil, b.fail("", "", "traffic policy %s version %d is not among the traffic policies read", pr.TrafficPolicyId, pr.TrafficPolicyVersion)
		}
		if err := b.build(p); err != nil {
			return nil, nil, nil, err
		}
		sets, origins = append(sets, b.sets...), append(origins, b.origins...)
		if pr.Id != "" {
			instances[pr.Id] = true
		}
	}
	return sets, origins, instances, nil
}

// maxDocument is the longest traffic policy document Route 53 accepts (the Document
// of CreateTrafficPolicy), in bytes.
const maxDocument = 102400

// build decodes the document and makes its record sets.
func (b *tfBuild) build(p *TrafficPolicy) error {
	if len(p.Document) > maxDocument {
		return b.fail("", "", "document of %d bytes, longer than Route 53's %d", len(p.Document), maxDocument)
	}
	if err := strict([]byte(p.Document), &b.doc); err != nil {
		return b.fail("", "", "document: %v", err)
	}
	if rule, ep, err := duplicateKey([]byte(p.Document)); err != nil {
		return b.fail(rule, ep, "%v", err)
	}
	doc := &b.doc
	switch {
	case doc.AWSPolicyFormatVersion != "2015-10-01" && doc.AWSPolicyFormatVersion != "2023-05-09":
		return b.fail("", "", "AWSPolicyFormatVersion %q, expected 2015-10-01 or 2023-05-09", doc.AWSPolicyFormatVersion)
	case p.Type != "" && !strings.EqualFold(p.Type, doc.RecordType):
		return b.fail("", "", "RecordType %s, but the policy's Type is %s", doc.RecordType, p.Type)
	case (doc.StartRule == "") == (doc.StartEndpoint == ""):
		return b.fail("", "", "expected one of StartRule and StartEndpoint")
	case b.pr.TTL < 0:
		return b.fail("", "", "TTL %d, expected 0 or more", b.pr.TTL)
	}
	name, err := normName(b.pr.Name)
	if err != nil {
		return b.fail("", "", "%v", err)
	}
	b.name = name
	b.eps, b.rules = map[string]*tfEndpoint{}, map[string]*tfRule{}
	for _, id := range slices.Sorted(maps.Keys(doc.Endpoints)) {
		ep := &tfEndpoint{}
		if err := strict(doc.Endpoints[id], ep); err != nil {
			return b.fail("", id, "%v", err)
		}
		b.eps[id] = ep
	}
	for _, id := range slices.Sorted(maps.Keys(doc.Rules)) {
		r := &tfRule{}
		if err := strict(doc.Rules[id], r); err != nil {
			return b.fail(id, "", "%v", err)
		}
		b.rules[id] = r
	}
	for _, id := range slices.Sorted(maps.Keys(b.rules)) { // those the start rule does not reach too
		if _, err := b.items(id, b.rules[id]); err != nil {
			return err
		}
	}
	if doc.StartEndpoint != "" {
		ep, ok := b.eps[doc.StartEndpoint]
		if !ok {
			return b.fail("", doc.StartEndpoint, "StartEndpoint names no endpoint of the document")
		}
		rs := ResourceRecordSet{Name: b.name, Type: doc.RecordType}
		if err := b.target(&rs, doc.StartEndpoint, ep, nil); err != nil {
			return err
		}
		b.add(rs, "", doc.StartEndpoint)
		return nil
	}
	if _, ok := b.rules[doc.StartRule]; !ok {
		return b.fail(doc.StartRule, "", "StartRule names no rule of the document")
	}
	return b.rule(doc.StartRule, b.name, nil)
}

// strict decodes one JSON value, refusing fields this importer does not know and
// anything after the value.
func strict(raw []byte, v any) error {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		return jsonErr(err)
	}
	if _, err := d.Token(); err != io.EOF {
		return errors.New("more after the JSON value")
	}
	return nil
}

func (b *tfBuild) add(rs ResourceRecordSet, rule, endpoint string) {
	b.sets = append(b.sets, rs)
	b.origins = append(b.origins, tfOrigin{record: b.pr.Name, policy: b.policy, rule: rule, endpoint: endpoint})
}

// ruleName is the name of rule id's record sets: a label of its own below the policy
// record's name, from the ID (lower case, other characters than letters, digits and
// `-` as `-`, at most 50 of them), with -2, -3... when two IDs would give one label.
func (b *tfBuild) ruleName(id string) (string, error) {
	if n, ok := b.names[id]; ok {
		return n, nil
	}
	if strings.HasPrefix(b.name, "*.") {
		return "", fmt.Errorf("a policy record at a wildcard name has no names below it for its rules")
	}
	label := strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-':
			return r
		case r >= 'A' && r <= 'Z':
			return r + 'a' - 'A'
		}
		return '-'
	}, id)
	if len(label) > 50 {
		label = label[:50]
	}
	n := "_tf-" + label + "." + b.name
	for k := 2; b.taken[n]; k++ {
		n = "_tf-" + label + "-" + strconv.Itoa(k) + "." + b.name
	}
	if len(n) > 254 {
		return "", fmt.Errorf("its name %s is longer than a domain name may be", n)
	}
	b.names[id], b.taken[n] = n, true
	return n, nil
}

// rule makes the record sets of rule id at name; path holds the rules above it, to
// refuse cycles.
func (b *tfBuild) rule(id, name string, path []string) error {
	if slices.Contains(path, id) {
		return b.fail(id, "", "rules refer to each other in a cycle: %s", strings.Join(append(path, id), " -> "))
	}
	if b.built[id] {
		return nil // referred to a second time: its record sets exist
	}
	b.built[id], b.names[id] = true, name
	r := b.rules[id]
	items, err := b.items(id, r)
	if err != nil {
		return err
	}
	seen := map[string]int{}
	for i, it := range items {
		rs := ResourceRecordSet{Name: name, Type: b.doc.RecordType, HealthCheckId: it.HealthCheck}
		ref := it.EndpointReference + it.RuleReference
		if seen[ref]++; seen[ref] > 1 {
			ref += "#" + strconv.Itoa(seen[ref])
		}
		rs.SetIdentifier = ref
		if err := b.key(&rs, id, r.RuleType, i, it); err != nil {
			return err
		}
		if err := b.item(&rs, id, it, append(path, id)); err != nil {
			return err
		}
		b.add(rs, id, it.EndpointReference)
	}
	return nil
}

// items returns a rule's items for its type, refusing the fields of other types.
func (b *tfBuild) items(id string, r *tfRule) ([]*tfItem, error) {
	lists := map[string][]*tfItem{"geo": r.Locations, "latency": r.Regions, "geoproximity": r.GeoproximityLocations,
		"multivalue": r.Items, "weighted": r.Items}
	var items []*tfItem
	switch r.RuleType {
	case "failover":
		if r.Primary == nil || r.Secondary == nil {
			return nil, b.fail(id, "", "a failover rule needs a Primary and a Secondary")
		}
		items = []*tfItem{r.Primary, r.Secondary}
	case "geo", "latency", "geoproximity", "multivalue", "weighted":
		items = lists[r.RuleType]
		if len(items) == 0 {
			return nil, b.fail(id, "", "a %s rule without any %s", r.RuleType, map[string]string{"geo": "Locations", "latency": "Regions",
				"geoproximity": "GeoproximityLocations", "multivalue": "Items", "weighted": "Items"}[r.RuleType])
		}
	default:
		return nil, b.fail(id, "", "RuleType %q: %v; expected failover, geo, latency, geoproximity, multivalue or weighted", r.RuleType, ErrUnsupported)
	}
	present := map[string]bool{"failover": r.Primary != nil || r.Secondary != nil, "geo": len(r.Locations) > 0,
		"latency": len(r.Regions) > 0, "geoproximity": len(r.GeoproximityLocations) > 0, "items": len(r.Items) > 0}
	want := r.RuleType
	if want == "multivalue" || want == "weighted" {
		want = "items"
	}
	for k, v := range present {
		if v && k != want {
			return nil, b.fail(id, "", "a %s rule with the fields of another rule type", r.RuleType)
		}
	}
	return items, nil
}

// policyState is what Convert keeps of the policy records: their record sets, where
// each came from, and the policy records' IDs.
type policyState struct {
	sets      []ResourceRecordSet
	origins   []tfOrigin
	instances map[string]bool
	first     int // the index of sets[0] among every record set converted
	left      int // zone record sets left out, made by a policy record read
}

// readPolicyRecords makes the policy records' record sets, before the zone's are read.
func (c *converter) readPolicyRecords() error {
	sets, origins, instances, err := policyRecordSets(&c.in)
	c.tf = policyState{sets: sets, origins: origins, instances: instances, first: len(c.in.RecordSets)}
	return err
}

// madeByPolicyRecord reports whether a zone record set is one a policy record read
// makes again from its document, and counts it.
func (c *converter) madeByPolicyRecord(rs *ResourceRecordSet) bool {
	if rs.TrafficPolicyInstanceId != "" && c.tf.instances[rs.TrafficPolicyInstanceId] {
		c.tf.left++
		return true
	}
	return false
}

// addPolicyRecords converts the policy records' record sets, after the zone's.
func (c *converter) addPolicyRecords() error {
	switch {
	case c.tf.left == 1:
		c.warnf("left out 1 record set that a policy record made: it is made again from its traffic policy document")
	case c.tf.left > 1:
		c.warnf("left out %d record sets that policy records made: they are made again from their traffic policy documents", c.tf.left)
	}
	for k := range c.tf.sets {
		m, err := c.member(&c.tf.sets[k], c.tf.first+k)
		if err == nil {
			err = c.add(m)
		}
		if err != nil {
			return c.policyErr(err)
		}
	}
	return nil
}

// policyErr names the policy record, rule or endpoint of an error about a record set
// a document made.
func (c *converter) policyErr(err error) error {
	var e *Error
	if !errors.As(err, &e) || e.Index < c.tf.first || e.Index-c.tf.first >= len(c.tf.origins) {
		return err
	}
	o := c.tf.origins[e.Index-c.tf.first]
	return &PolicyError{Record: o.record, Policy: o.policy, Rule: o.rule, Endpoint: o.endpoint, Err: e}
}
