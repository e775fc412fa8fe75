package test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/miekg/dns"

	"github.com/healthroute/healthroute/internal/coretest"
)

// TestTypesRoute53MatchesFile serves route53/testdata/types.records.json (every
// record type the import takes) with the route53 property, and a zone file written
// from the same JSON with CoreDNS's file plugin, in one process, and checks every
// name and type: the same rcode and authoritative bit, byte for byte the same answer
// and additional records, the same referrals.
func TestTypesRoute53MatchesFile(t *testing.T) {
	records, err := filepath.Abs(filepath.Join("..", "route53", "testdata", "types.records.json"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(records)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		ResourceRecordSets []struct {
			Name, Type      string
			TTL             int
			ResourceRecords []struct{ Value string }
		}
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	// Route 53's names are fully qualified with or without the final dot: origin ".".
	var zf strings.Builder
	zf.WriteString("$ORIGIN .\n")
	for _, rs := range doc.ResourceRecordSets {
		for _, v := range rs.ResourceRecords {
			fmt.Fprintf(&zf, "%s %d IN %s %s\n", strings.ReplaceAll(rs.Name, `\052`, "*"), rs.TTL, rs.Type, v.Value)
		}
	}
	zone := filepath.Join(t.TempDir(), "db.example.com")
	if err := os.WriteFile(zone, []byte(zf.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	hrPort, filePort := coretest.FreePort(t), coretest.FreePort(t)
	hr := coretest.Start(t, fmt.Sprintf(`example.com:%d {
	bind 127.0.0.1
	healthroute {
		route53 {
			records %s
		}
	}
}
example.com:%d {
	bind 127.0.0.1
	file %s
}`, hrPort, records, filePort, zone), hrPort, "example.com")
	file := &coretest.Server{Addr: fmt.Sprintf("127.0.0.1:%d", filePort)}

	names := []string{"example.com.", "x", "_sip._tcp", "dkim._domainkey", "ds", "legacy", "quotes", "sip", "sub", "a.sub", "44.2.0", "www", "nope.ds"}
	qtypes := []uint16{dns.TypeA, dns.TypeAAAA, dns.TypeCAA, dns.TypeMX, dns.TypeTXT, dns.TypeSRV, dns.TypeSPF, dns.TypeNAPTR, dns.TypeDS, dns.TypePTR, dns.TypeCNAME}
	if answered := typesCompare(t, hr, file, "example.com.", names, qtypes); answered < 20 {
		t.Fatalf("only %d questions had answers; the comparison covers too little", answered)
	}
}
