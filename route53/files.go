package route53

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/healthroute/healthroute/internal/watch"
)

// Files names the JSON files of a hosted zone.
type Files struct {
	Records      string   // list-resource-record-sets output or a change batch; "-" for standard input; "" for none (traffic policies only)
	HealthChecks string   // list-health-checks output; "" for none
	CIDRBlocks   []string // list-cidr-blocks output of each collection, [COLLECTION_ID=]FILE
	// TrafficPolicies are get-traffic-policy or list-traffic-policy-versions output,
	// or bare documents, [POLICY_ID[:VERSION]=]FILE; PolicyRecords is
	// list-traffic-policy-instances output ("" for none).
	TrafficPolicies []string
	PolicyRecords   string
	// Limit is the size limit of each file, in bytes (0: watch.DefaultLimit). A file
	// over it is refused, a regular file before it is read.
	Limit int64
	// Read is how many bytes the last Load read, over all files.
	Read int64
}

// Paths returns every file f names.
func (f Files) Paths() []string {
	var out []string
	if f.Records != "" {
		out = append(out, f.Records)
	}
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

// Load reads the files into an Input; errors name the file. Each file is read as a
// stream and refused at the first token that shows it is not what it should be.
func (f *Files) Load() (Input, error) {
	var in Input
	var err error
	f.Read = 0
	if f.Records == "" && len(f.TrafficPolicies) == 0 {
		return in, errors.New("no records file and no traffic policy: nothing to load")
	}
	if f.Records != "" {
		if in.RecordSets, err = readFile(f, f.Records, ReadRecordSets); err != nil {
			return in, err
		}
	}
	if f.HealthChecks != "" {
		if in.HealthChecks, err = readFile(f, f.HealthChecks, ReadHealthChecks); err != nil {
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
		if in.CIDRBlocks[id], err = readFile(f, file, ReadCIDRBlocks); err != nil {
			return in, err
		}
	}
	return in, f.loadTrafficFlow(&in)
}

// readFile reads path ("-": standard input) with read, at most f's limit of it,
// and adds what it read to f.Read.
func readFile[T any](f *Files, path string, read func(io.Reader) (T, error)) (T, error) {
	limit := f.Limit
	if limit <= 0 {
		limit = watch.DefaultLimit
	}
	if path == "-" {
		r := watch.NewReader(os.Stdin, "standard input", limit)
		v, err := read(r)
		f.Read += r.N()
		if err != nil && !watch.IsTooLarge(err) {
			err = fmt.Errorf("standard input: %w", err)
		}
		return v, tooLarge(err)
	}
	file, err := watch.Open(path, limit)
	if err != nil {
		var zero T
		return zero, err
	}
	defer file.Close()
	v, err := read(file)
	f.Read += file.N()
	var pe *os.PathError
	if err != nil && !errors.As(err, &pe) && !watch.IsTooLarge(err) {
		err = fmt.Errorf("%s: %w", path, err)
	}
	return v, tooLarge(err)
}

// tooLarge returns err, or the bare size-limit error when err wraps one: the
// limit, not the JSON cut at it, is what went wrong.
func tooLarge(err error) error {
	var e *watch.TooLargeError
	if errors.As(err, &e) {
		return e
	}
	return err
}
