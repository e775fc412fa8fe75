// Package route53 turns a Route 53 hosted zone, as the aws CLI prints it, into
// healthroute Corefile text: `region`, `check` and `record` lines to put inside a
// healthroute block.
//
// It reads the JSON of `aws route53 list-resource-record-sets` (or a change batch
// that creates the same record sets), `aws route53 list-health-checks` and `aws
// route53 list-cidr-blocks`, and Traffic Flow's traffic policy documents with the
// policy records that bind them to names (docs/traffic-flow.md). Record sets of one name and type become the members of
// one `record NAME POLICY { ... }` block; every type of a name shares one block when
// their policies and TTLs agree and their members can be told apart, else each type
// gets its own block (see Convert). A record set's TTL becomes a `ttl N` line at the
// top of its block.
//
// # Member targets
//
// A, AAAA, CNAME and alias targets are written as healthroute has always read them
// (`A 192.0.2.1 192.0.2.2`, `CNAME www.example.net.`, `alias www.example.org.`).
// Other types are written as TYPE followed by each value's fields in zone-file
// presentation format, values one after another on the member line:
//
//	MX 10 mail1.example.org. 20 mail2.example.org.
//	SRV 10 5 443 svc1.example.org. 20 5 443 svc2.example.org.
//	CAA 0 issue "ca.example.net" 0 iodef "mailto:security@example.org"
//	NAPTR 100 10 "S" "SIP+D2U" "" _sip._udp.example.org.
//	DS 60485 5 1 2BB183AF5F22588179A53B0A98631FAD1A292118
//	NS ns1.example.org. ns2.example.org.
//	PTR host.example.org.
//	TXT "v=spf1 -all" "google-site-verification=abc"
//	TXT "\"first string\" \"second string of the same value\""
//
// In a block that holds one type of several at its name, an alias member names that
// type after its target (`alias both.example.org. A`), and answers that type only, as
// Route 53's aliases do; an alias without a type follows every type of its target.
//
// Each type has a fixed number of fields per value (MX 2, SRV 4, CAA 3, NAPTR 6,
// DS 4, NS, PTR and CNAME 1), so a reader takes values field by field until a member
// option (`check`, `id`, `evaluate_target_health`) or the end of the line; every
// value begins with a number or a fully qualified name, never with an option
// keyword. Character-string fields (the CAA value; NAPTR flags, services and regexp)
// are always quoted; after Corefile unquoting their token is the string's content
// in presentation format (escapes such as \059 kept as written, an escaped quote
// written \034), and a reader puts it back between quotes. For instance
// dns.NewRR(`NAME TTL IN CAA 0 issue "` + token + `"`) rebuilds the record.
//
// TXT and SPF take one token per value. A token that, after Corefile unquoting,
// begins with `"` is the whole value in presentation format (one or more quoted
// character-strings, as the second TXT line above); any other token is the content of
// a single character-string. The importer writes the short form whenever the value is
// one string that is not empty, holds no backslash and is not an option keyword or a
// brace, and the long form otherwise.
//
// # TTL
//
// `ttl N` is the first line of a record block when its record sets have a TTL: the
// seconds every answer from the block's non-alias members carries. Alias members
// have no TTL of their own (Route 53 answers with the target's). A block without a
// `ttl` line uses the healthroute block's ttl.
package route53

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Input is a hosted zone to convert.
type Input struct {
	// Zone is the hosted zone's name. Empty: the name of the SOA record set.
	Zone string
	// RecordSets are the zone's record sets, in any order.
	RecordSets []ResourceRecordSet
	// HealthChecks are the account's health checks; those the record sets use (and
	// their children) are converted, the others left out.
	HealthChecks []HealthCheck
	// CIDRBlocks holds each CIDR collection's blocks by collection ID; the key ""
	// serves record sets of any collection that has no entry of its own.
	CIDRBlocks map[string][]CidrBlock
	// BlockTTL leaves the `ttl` lines out, so that every answer carries the
	// healthroute block's ttl.
	BlockTTL bool
	// TrafficPolicies are traffic policy versions, and PolicyRecords the policy
	// records that bind them to names: each becomes the record sets of its document
	// (docs/traffic-flow.md).
	TrafficPolicies []TrafficPolicy
	PolicyRecords   []PolicyRecord
}

// Result is the Corefile text of a converted zone.
type Result struct {
	Zone     string   // the hosted zone, fully qualified
	Corefile string   // region, check and record lines for a healthroute block
	Warnings []string // what answers differently from Route 53, and why
}

// Error is a record set that cannot be converted.
type Error struct {
	Name, Type, SetIdentifier string
	Index                     int // position among the input's record sets
	Err                       error
}

// Error names the record set, then says what is wrong with it.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("record set ")
	if e.Name == "" && e.Type == "" {
		b.WriteString("#" + strconv.Itoa(e.Index))
	} else {
		b.WriteString(e.Name + " " + e.Type)
	}
	if e.SetIdentifier != "" {
		b.WriteString(" (" + strconv.Quote(e.SetIdentifier) + ")")
	}
	b.WriteString(": " + e.Err.Error())
	return b.String()
}

// Unwrap returns what is wrong with the record set.
func (e *Error) Unwrap() error { return e.Err }

// ErrUnsupported marks what Route 53 has and healthroute cannot reproduce.
var ErrUnsupported = errors.New("not supported")

func rsErr(rs *ResourceRecordSet, i int, format string, args ...any) *Error {
	return &Error{Name: rs.Name, Type: rs.Type, SetIdentifier: rs.SetIdentifier, Index: i, Err: fmt.Errorf(format, args...)}
}
