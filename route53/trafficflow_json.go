package route53

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
)

// TrafficPolicy is one version of a traffic policy, as get-traffic-policy prints it;
// Document is the JSON document as a string.
type TrafficPolicy struct {
	Id       string
	Version  int
	Name     string `json:",omitempty"`
	Type     string `json:",omitempty"`
	Document string
	Comment  string `json:",omitempty"`
}

// PolicyRecord is a traffic policy instance (a policy record), as
// list-traffic-policy-instances prints it: a name and a TTL bound to a policy version.
type PolicyRecord struct {
	Id                   string `json:",omitempty"`
	HostedZoneId         string `json:",omitempty"`
	Name                 string
	TTL                  int64
	State                string `json:",omitempty"`
	Message              string `json:",omitempty"`
	TrafficPolicyId      string
	TrafficPolicyVersion int
	TrafficPolicyType    string `json:",omitempty"`
}

// ReadTrafficPolicies reads get-traffic-policy output ({"TrafficPolicy": {...}}),
// list-traffic-policy-versions output ({"TrafficPolicies": [...]}), or a bare
// document ({"AWSPolicyFormatVersion": ...}), which becomes version 1 of the policy
// bareID ("" refuses a bare document).
func ReadTrafficPolicies(r io.Reader, bareID string) ([]TrafficPolicy, error) {
	raw, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	var doc struct {
		TrafficPolicy          *TrafficPolicy
		TrafficPolicies        []TrafficPolicy
		AWSPolicyFormatVersion string
		IsTruncated            bool
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, fmt.Errorf("traffic policies: %w", jsonErr(err))
	}
	switch {
	case doc.AWSPolicyFormatVersion != "":
		id, version, _ := strings.Cut(bareID, ":")
		v := 1
		if version != "" {
			if v, err = strconv.Atoi(version); err != nil || v < 1 {
				return nil, fmt.Errorf("traffic policy %q: version %q, expected a number from 1", id, version)
			}
		}
		if id == "" {
			return nil, errors.New("a bare traffic policy document: name its policy, as ID[:VERSION]=FILE")
		}
		return []TrafficPolicy{{Id: id, Version: v, Document: string(raw)}}, nil
	case doc.IsTruncated:
		return nil, errors.New("traffic policies: the listing is truncated; list every version")
	case doc.TrafficPolicy != nil:
		return []TrafficPolicy{*doc.TrafficPolicy}, nil
	case doc.TrafficPolicies != nil:
		return doc.TrafficPolicies, nil
	}
	return nil, errors.New("traffic policies: expected TrafficPolicy, TrafficPolicies or a document with AWSPolicyFormatVersion")
}

// ReadPolicyRecords reads list-traffic-policy-instances output
// ({"TrafficPolicyInstances": [...]}), get-traffic-policy-instance output
// ({"TrafficPolicyInstance": {...}}) or a bare array of policy records.
func ReadPolicyRecords(r io.Reader) ([]PolicyRecord, error) {
	var list []PolicyRecord
	var doc struct {
		TrafficPolicyInstances []PolicyRecord
		TrafficPolicyInstance  *PolicyRecord
		IsTruncated            bool
	}
	array, err := readDoc(r, &list, &doc)
	switch {
	case err != nil:
		return nil, fmt.Errorf("policy records: %w", err)
	case array:
	case doc.IsTruncated:
		return nil, errors.New("policy records: the listing is truncated; list every page")
	case doc.TrafficPolicyInstance != nil:
		list = []PolicyRecord{*doc.TrafficPolicyInstance}
	case doc.TrafficPolicyInstances != nil:
		list = doc.TrafficPolicyInstances
	default:
		return nil, errors.New("policy records: expected TrafficPolicyInstances or TrafficPolicyInstance")
	}
	for i, p := range list {
		if p.Name == "" || p.TrafficPolicyId == "" || p.TrafficPolicyVersion < 1 {
			return nil, fmt.Errorf("policy record %d: expected Name, TTL, TrafficPolicyId and TrafficPolicyVersion", i)
		}
	}
	return list, nil
}

// loadTrafficFlow reads the traffic policy and policy record files into in.
func (f *Files) loadTrafficFlow(in *Input) error {
	for _, p := range f.TrafficPolicies {
		id, file, ok := strings.Cut(p, "=")
		if !ok {
			id, file = "", p
		}
		ps, err := readFile(f, file, func(r io.Reader) ([]TrafficPolicy, error) { return ReadTrafficPolicies(r, id) })
		if err != nil {
			return err
		}
		in.TrafficPolicies = append(in.TrafficPolicies, ps...)
	}
	if f.PolicyRecords != "" {
		var err error
		if in.PolicyRecords, err = readFile(f, f.PolicyRecords, ReadPolicyRecords); err != nil {
			return err
		}
	}
	return nil
}

// duplicateKey finds a key given twice in one object of a document that decoded, which
// encoding/json would read as its last value: a rule or endpoint ID given twice, or a
// field given twice in one. It returns the rule or endpoint it is in, if any.
func duplicateKey(doc []byte) (rule, endpoint string, err error) {
	d := json.NewDecoder(bytes.NewReader(doc))
	d.UseNumber()
	var path []string
	var value func() error
	value = func() error {
		t, err := d.Token()
		if err != nil {
			return err
		}
		switch t {
		case json.Delim('['):
			for d.More() {
				if err := value(); err != nil {
					return err
				}
			}
		case json.Delim('{'):
			seen := map[string]bool{}
			for d.More() {
				k, err := d.Token()
				if err != nil {
					return err
				}
				key, _ := k.(string)
				if seen[key] {
					return &dupKeyError{path: slices.Clone(path), key: key}
				}
				seen[key] = true
				path = append(path, key)
				if err := value(); err != nil {
					return err
				}
				path = path[:len(path)-1]
			}
		default:
			return nil
		}
		_, err = d.Token() // the closing delimiter
		return err
	}
	err = value()
	var de *dupKeyError
	if !errors.As(err, &de) {
		return "", "", err
	}
	where := append(de.path, de.key)
	switch {
	case len(where) >= 2 && where[0] == "Rules":
		rule = where[1]
	case len(where) >= 2 && where[0] == "Endpoints":
		endpoint = where[1]
	}
	return rule, endpoint, de
}

// dupKeyError is a key given twice, at path (the keys of the objects around it).
type dupKeyError struct {
	path []string
	key  string
}

func (e *dupKeyError) Error() string {
	switch {
	case len(e.path) == 1 && e.path[0] == "Rules":
		return "the rule ID is given twice in Rules, expected each once"
	case len(e.path) == 1 && e.path[0] == "Endpoints":
		return "the endpoint ID is given twice in Endpoints, expected each once"
	}
	return fmt.Sprintf("%q is given twice in one object, expected each key once", e.key)
}
