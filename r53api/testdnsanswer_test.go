package r53api

import (
	"context"
	"net/netip"
	"slices"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/route53"
	"github.com/miekg/dns"

	"github.com/healthroute/healthroute/view"
)

// TestDNSAnswerAsksExplainForTheClientSubnet checks, through the SDK, that
// TestDNSAnswer resolves the question for the client Route 53 would simulate
// (the EDNS0 subnet cut to its mask, by default /24 and /64, else the resolver)
// and answers explain's answer's values and code.
func TestDNSAnswerAsksExplainForTheClientSubnet(t *testing.T) {
	var mu sync.Mutex
	var asked []view.Question
	explain := func(q view.Question) (view.Explanation, bool) {
		mu.Lock()
		defer mu.Unlock()
		asked = append(asked, q)
		if q.Name == "gone.example.org." {
			return view.Explanation{Rcode: "NXDOMAIN"}, true
		}
		return view.Explanation{Rcode: "NOERROR", Answer: []string{"www.example.org.\t60\tIN\tA\t192.0.2.10", "www.example.org.\t60\tIN\tA\t192.0.2.11"}}, true
	}
	_, c := startBackend(t, DefaultLimits, Backend{Zones: func() []Zone { return []Zone{{Name: "example.org."}} }, Lookups: Lookups{Explain: explain}})
	ctx := context.Background()
	zone := aws.String(ZoneID("example.org."))
	for _, tc := range []struct {
		ip, mask, resolver string
		client             string
	}{
		{"198.51.100.77", "", "", "198.51.100.0/24"},
		{"198.51.100.77", "32", "", "198.51.100.77/32"},
		{"2001:db8:1:2:3::1", "", "", "2001:db8:1:2::/64"},
		{"", "", "203.0.113.5", "203.0.113.5/32"},
		{"", "", "", "0.0.0.0/32"},
	} {
		in := &route53.TestDNSAnswerInput{HostedZoneId: zone, RecordName: aws.String("WWW.example.org"), RecordType: "A"}
		if tc.ip != "" {
			in.EDNS0ClientSubnetIP = aws.String(tc.ip)
		}
		if tc.mask != "" {
			in.EDNS0ClientSubnetMask = aws.String(tc.mask)
		}
		if tc.resolver != "" {
			in.ResolverIP = aws.String(tc.resolver)
		}
		out, err := c.TestDNSAnswer(ctx, in)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(out.RecordData, []string{"192.0.2.10", "192.0.2.11"}) || aws.ToString(out.ResponseCode) != "NOERROR" || aws.ToString(out.RecordName) != "www.example.org." {
			t.Errorf("answer %q %s %s", out.RecordData, aws.ToString(out.ResponseCode), aws.ToString(out.RecordName))
		}
		mu.Lock()
		q := asked[len(asked)-1]
		mu.Unlock()
		if q.Client != netip.MustParsePrefix(tc.client) || q.Name != "www.example.org." || q.Type != dns.TypeA {
			t.Errorf("ECS %q/%q resolver %q: explain asked %+v, want client %s", tc.ip, tc.mask, tc.resolver, q, tc.client)
		}
	}
	out, err := c.TestDNSAnswer(ctx, &route53.TestDNSAnswerInput{HostedZoneId: zone, RecordName: aws.String("gone.example.org"), RecordType: "AAAA"})
	if err != nil || aws.ToString(out.ResponseCode) != "NXDOMAIN" || len(out.RecordData) != 0 {
		t.Errorf("a name with nothing: %+v, %v; want NXDOMAIN", out, err)
	}
	for _, in := range []*route53.TestDNSAnswerInput{
		{HostedZoneId: zone, RecordName: aws.String("www.example.com"), RecordType: "A"},
		{HostedZoneId: zone, RecordName: aws.String("www.example.org"), RecordType: "A", EDNS0ClientSubnetIP: aws.String("not-an-ip")},
		{HostedZoneId: zone, RecordName: aws.String("www.example.org"), RecordType: "A", EDNS0ClientSubnetIP: aws.String("192.0.2.1"), EDNS0ClientSubnetMask: aws.String("33")},
	} {
		if _, err := c.TestDNSAnswer(ctx, in); code(err) != "InvalidInput" {
			t.Errorf("%s ECS %s/%s: %v, want InvalidInput", aws.ToString(in.RecordName), aws.ToString(in.EDNS0ClientSubnetIP), aws.ToString(in.EDNS0ClientSubnetMask), err)
		}
	}
	if _, err := c.TestDNSAnswer(ctx, &route53.TestDNSAnswerInput{HostedZoneId: aws.String("ZNOPE"), RecordName: aws.String("www.example.org"), RecordType: "A"}); code(err) != "NoSuchHostedZone" {
		t.Errorf("an unknown zone: %v, want NoSuchHostedZone", err)
	}
}
