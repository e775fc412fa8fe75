package r53api

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/healthroute/healthroute/route53"
)

// Route 53's bounds of free-text fields (botocore's model of the API), checked
// before anything is kept: what is kept goes into the replicated state, written
// out on every change.
const (
	MaxCommentChars         = 256 // a change batch's Comment (ResourceDescription)
	MaxNameChars            = 1024
	MaxSetIdentifierChars   = 128
	MaxRDataChars           = 4000 // one ResourceRecord's Value
	MaxHealthCheckIDChars   = 64
	MaxCallerReferenceChars = 64
	MaxCheckTextChars       = 255 // ResourcePath, FullyQualifiedDomainName, SearchString, RoutingControlArn
	MaxTagKeyChars          = 128
	MaxTagValueChars        = 256
)

// validation gathers a request's fields out of bounds, as Route 53 words them.
type validation []string

// length notes value when it is longer than max characters (or empty when min is 1).
func (v *validation) length(field, value string, min, max int) {
	n := utf8.RuneCountInString(value)
	switch {
	case n > max:
		*v = append(*v, fmt.Sprintf("Value of %d characters at '%s' failed to satisfy constraint: Member must have length less than or equal to %d", n, field, max))
	case n < min:
		*v = append(*v, fmt.Sprintf("Value at '%s' failed to satisfy constraint: Member must have length greater than or equal to %d", field, min))
	}
}

// items notes a list of more than max members.
func (v *validation) items(field string, n, max int) {
	if n > max {
		*v = append(*v, fmt.Sprintf("Value with %d members at '%s' failed to satisfy constraint: Member must have length less than or equal to %d", n, field, max))
	}
}

// err is the InvalidInput answer, nil when every field is within bounds.
func (v validation) err() *apiError {
	if len(v) == 0 {
		return nil
	}
	s := "s"
	if len(v) == 1 {
		s = ""
	}
	return errInput(fmt.Sprintf("%d validation error%s detected: %s", len(v), s, strings.Join(v, "; ")))
}

// batchFields bounds a change batch's comment and its record sets' text.
func batchFields(req *changeResourceRecordSetsRequest) *apiError {
	var v validation
	v.length("changeBatch.comment", req.ChangeBatch.Comment, 0, MaxCommentChars)
	for i, c := range req.ChangeBatch.Changes {
		rs := c.ResourceRecordSet
		if rs == nil {
			continue
		}
		at := fmt.Sprintf("changeBatch.changes.%d.member.resourceRecordSet.", i+1)
		v.length(at+"name", rs.Name, 0, MaxNameChars)
		v.length(at+"setIdentifier", rs.SetIdentifier, 0, MaxSetIdentifierChars)
		v.length(at+"healthCheckId", rs.HealthCheckId, 0, MaxHealthCheckIDChars)
		for j, r := range rs.ResourceRecords {
			v.length(fmt.Sprintf("%sresourceRecords.%d.member.value", at, j+1), r.Value, 0, MaxRDataChars)
		}
		if a := rs.AliasTarget; a != nil {
			v.length(at+"aliasTarget.dNSName", a.DNSName, 0, MaxNameChars)
			v.length(at+"aliasTarget.hostedZoneId", a.HostedZoneId, 0, 32)
		}
		if len(v) > 10 { // enough to say what is wrong
			break
		}
	}
	return v.err()
}

// checkFields bounds a health check's caller reference ("" for an update) and
// its configuration's text.
func checkFields(callerReference string, c *route53.HealthCheckConfig, create bool) *apiError {
	var v validation
	if create {
		v.length("callerReference", callerReference, 1, MaxCallerReferenceChars)
	}
	v.length("healthCheckConfig.iPAddress", c.IPAddress, 0, 45)
	v.length("healthCheckConfig.resourcePath", c.ResourcePath, 0, MaxCheckTextChars)
	v.length("healthCheckConfig.fullyQualifiedDomainName", c.FullyQualifiedDomainName, 0, MaxCheckTextChars)
	v.length("healthCheckConfig.searchString", c.SearchString, 0, MaxCheckTextChars)
	v.length("healthCheckConfig.routingControlArn", c.RoutingControlArn, 0, MaxCheckTextChars)
	v.items("healthCheckConfig.childHealthChecks", len(c.ChildHealthChecks), 256)
	for i, id := range c.ChildHealthChecks {
		v.length(fmt.Sprintf("healthCheckConfig.childHealthChecks.%d.member", i+1), id, 0, MaxHealthCheckIDChars)
	}
	v.items("healthCheckConfig.regions", len(c.Regions), 64)
	for i, r := range c.Regions {
		v.length(fmt.Sprintf("healthCheckConfig.regions.%d.member", i+1), r, 0, 64)
	}
	if a := c.AlarmIdentifier; a != nil {
		v.length("healthCheckConfig.alarmIdentifier.name", a.Name, 1, 256)
		v.length("healthCheckConfig.alarmIdentifier.region", a.Region, 1, 64)
	}
	return v.err()
}

// tagFields bounds a ChangeTagsForResource request.
func tagFields(req *changeTagsForResourceRequest) *apiError {
	var v validation
	v.items("addTags", len(req.AddTags), 10)
	v.items("removeTagKeys", len(req.RemoveTagKeys), 10)
	for i, t := range req.AddTags {
		v.length(fmt.Sprintf("addTags.%d.member.key", i+1), t.Key, 1, MaxTagKeyChars)
		v.length(fmt.Sprintf("addTags.%d.member.value", i+1), t.Value, 0, MaxTagValueChars)
	}
	for i, k := range req.RemoveTagKeys {
		v.length(fmt.Sprintf("removeTagKeys.%d.member", i+1), k, 1, MaxTagKeyChars)
	}
	return v.err()
}
