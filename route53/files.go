package route53

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// Files names the JSON files of a hosted zone.
type Files struct {
	Records      string   // list-resource-record-sets output or a change batch; "-" for standard input
	HealthChecks string   // list-health-checks output; "" for none
	CIDRBlocks   []string // list-cidr-blocks output of each collection, [COLLECTION_ID=]FILE
	// TrafficPolicies are get-traffic-policy or list-traffic-policy-versions output,
	// or bare documents, [POLICY_ID[:VERSION]=]FILE; PolicyRecords is
	// list-traffic-policy-instances output ("" for none).
	TrafficPolicies []string
	PolicyRecords   string
}

// Paths returns every file f names.
func (f Files) Paths() []string {
	out := []string{f.Records}
	if f.HealthChecks != "" {
		out = append(out, f.HealthChecks)
	}
	for _, c := range f.CIDRBlocks {
		out = append(out, cidrPath(c))
	}
	for _, p := range f.TrafficPolicies {
		out = append(out, cidrPath(p))
	}
	if f.PolicyRecords != "" {
		out = append(out, f.PolicyRecords)
	}
	return out
}

func cidrPath(c string) string {
	if _, file, ok := strings.Cut(c, "="); ok {
		return file
	}
	return c
}

// Load reads the files into an Input; errors name the file.
func (f Files) Load() (Input, error) {
	var in Input
	var err error
	if in.RecordSets, err = readFile(f.Records, ReadRecordSets); err != nil {
		return in, err
	}
	if f.HealthChecks != "" {
		if in.HealthChecks, err = readFile(f.HealthChecks, ReadHealthChecks); err != nil {
			return in, err
		}
	}
	for _, c := range f.CIDRBlocks {
		id, file, ok := strings.Cut(c, "=")
		if !ok {
			id, file = "", c
		}
		if in.CIDRBlocks == nil {
			in.CIDRBlocks = map[string][]CidrBlock{}
		}
		if _, dup := in.CIDRBlocks[id]; dup {
			return in, fmt.Errorf("%s: collection %q given twice", c, id)
		}
		if in.CIDRBlocks[id], err = readFile(file, ReadCIDRBlocks); err != nil {
			return in, err
		}
	}
	return in, f.loadTrafficFlow(&in)
}

// readFile reads path ("-": standard input) with read.
func readFile[T any](path string, read func(io.Reader) (T, error)) (T, error) {
	if path == "-" {
		v, err := read(os.Stdin)
		if err != nil {
			err = fmt.Errorf("standard input: %w", err)
		}
		return v, err
	}
	f, err := os.Open(path)
	if err != nil {
		var zero T
		return zero, err
	}
	defer f.Close()
	v, err := read(f)
	if err != nil {
		var pe *os.PathError
		if !errors.As(err, &pe) {
			err = fmt.Errorf("%s: %w", path, err)
		}
	}
	return v, err
}
