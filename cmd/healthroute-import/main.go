// Command healthroute-import prints the healthroute Corefile lines (region, check and
// record) equivalent to a Route 53 hosted zone, from the JSON the aws CLI prints:
//
//	healthroute-import -records rrsets.json [-checks checks.json] [-cidr [COLLECTION_ID=]blocks.json]... [-zone example.org.] [-block-ttl]
//	    [-traffic-policy [POLICY_ID[:VERSION]=]policy.json]... [-policy-records instances.json] [-max-file-size 64M]
//
// The lines go to standard output, to be put inside a healthroute block as they are,
// `ttl` lines included; warnings (what will answer differently from Route 53) go to
// standard error. It exits 1 when the zone cannot be converted, printing nothing, and
// 2 on bad usage. -block-ttl leaves the `ttl` lines out, for every answer to carry the
// healthroute block's ttl instead.
//
// To serve the export without editing it, the healthroute block's `route53` property
// reads the same files at startup and whenever they change.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/healthroute/healthroute/internal/watch"
	"github.com/healthroute/healthroute/route53"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

// cidrFlags collects -cidr [COLLECTION_ID=]FILE.
type cidrFlags []string

func (f *cidrFlags) String() string     { return strings.Join(*f, ",") }
func (f *cidrFlags) Set(s string) error { *f = append(*f, s); return nil }

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("healthroute-import", flag.ContinueOnError)
	fs.SetOutput(stderr)
	records := fs.String("records", "", "`FILE` of aws route53 list-resource-record-sets output, or a change batch; - for standard input (required without -traffic-policy)")
	checks := fs.String("checks", "", "`FILE` of aws route53 list-health-checks output")
	zone := fs.String("zone", "", "the hosted zone's `NAME`; default: the SOA record set's name")
	maxSize := fs.String("max-file-size", "64M", "the size limit of each file: bytes, or with K, M or G (KiB, MiB, GiB), from 1K to 4G")
	blockTTL := fs.Bool("block-ttl", false, "leave out the ttl lines: every answer carries the healthroute block's ttl, not the record set's")
	var cidrs, policies cidrFlags
	fs.Var(&policies, "traffic-policy", "`[POLICY_ID[:VERSION]=]FILE` of aws route53 get-traffic-policy or list-traffic-policy-versions output, or a bare traffic policy document (then with its ID); repeat for each")
	policyRecords := fs.String("policy-records", "", "`FILE` of aws route53 list-traffic-policy-instances output: the policy records that bind the traffic policies to names and TTLs")
	fs.Var(&cidrs, "cidr", "`[COLLECTION_ID=]FILE` of aws route53 list-cidr-blocks output; repeat for each collection (without an ID: any collection)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: healthroute-import {-records FILE | -zone NAME -traffic-policy FILE} [-checks FILE] [-cidr [COLLECTION_ID=]FILE]... [-zone NAME] [-block-ttl] [-traffic-policy [POLICY_ID[:VERSION]=]FILE]... [-policy-records FILE] [-max-file-size SIZE]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *records == "" && len(policies) == 0 || fs.NArg() > 0 {
		fs.Usage()
		return 2
	}
	limit, ok := watch.ParseSize(*maxSize)
	if !ok {
		fmt.Fprintf(stderr, "healthroute-import: -max-file-size: invalid value %q, expected a size from 1K to 4G\n", *maxSize)
		return 2
	}
	files := route53.Files{Records: *records, HealthChecks: *checks, CIDRBlocks: cidrs, TrafficPolicies: policies, PolicyRecords: *policyRecords, Limit: limit}
	in, err := files.Load()
	if err == nil {
		in.Zone, in.BlockTTL = *zone, *blockTTL
		var res *route53.Result
		if res, err = route53.Convert(in); err == nil {
			for _, w := range res.Warnings {
				fmt.Fprintf(stderr, "healthroute-import: warning: %s\n", w)
			}
			if _, err = io.WriteString(stdout, res.Corefile); err == nil {
				return 0
			}
		}
	}
	fmt.Fprintf(stderr, "healthroute-import: %v\n", err)
	return 1
}
