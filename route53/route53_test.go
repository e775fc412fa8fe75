package route53

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/coredns/caddy"
	"github.com/miekg/dns"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// readFixture reads testdata/NAME.records.json and, when present, NAME.checks.json
// and NAME.cidr.json (blocks for any collection).
func readFixture(t testing.TB, name string) Input {
	t.Helper()
	var in Input
	open := func(suffix string) *os.File {
		f, err := os.Open(filepath.Join("testdata", name+suffix))
		if errors.Is(err, os.ErrNotExist) && suffix != ".records.json" {
			return nil
		}
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		return f
	}
	var err error
	if in.RecordSets, err = ReadRecordSets(open(".records.json")); err != nil {
		t.Fatal(err)
	}
	if f := open(".checks.json"); f != nil {
		if in.HealthChecks, err = ReadHealthChecks(f); err != nil {
			t.Fatal(err)
		}
	}
	if f := open(".cidr.json"); f != nil {
		blocks, err := ReadCIDRBlocks(f)
		if err != nil {
			t.Fatal(err)
		}
		in.CIDRBlocks = map[string][]CidrBlock{"": blocks}
	}
	if !strings.Contains(name, "types") {
		in.Zone = "example.com." // change batches carry no SOA
	}
	return in
}

// golden renders a Result as its golden file holds it.
func golden(r *Result) string {
	var b strings.Builder
	b.WriteString(r.Corefile)
	b.WriteString("-- warnings --\n")
	for _, w := range r.Warnings {
		b.WriteString(w + "\n")
	}
	return b.String()
}

// TestGolden converts each fixture, written from the Route 53 documentation's
// examples of each routing policy, record type and health check type, and compares
// the text with testdata/NAME.golden (go test -update rewrites them).
func TestGolden(t *testing.T) {
	files, _ := filepath.Glob("testdata/*.records.json")
	if len(files) < 10 {
		t.Fatalf("found %d fixtures, expected at least 10", len(files))
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".records.json")
		t.Run(name, func(t *testing.T) {
			res, err := Convert(readFixture(t, name))
			if err != nil {
				t.Fatal(err)
			}
			got, path := golden(res), filepath.Join("testdata", name+".golden")
			if *update {
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if got != string(want) {
				t.Errorf("output differs from %s:\n%s", path, got)
			}
		})
	}
}

// TestValuesRebuild reads the member targets of the types fixture's output back the
// way the package documentation says a reader does (the Corefile lexer, then fields
// per type), and checks that each rebuilt value is the record Route 53's value is.
func TestValuesRebuild(t *testing.T) {
	in := readFixture(t, "types")
	res, err := Convert(in)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]dns.RR{} // "name type" -> records
	for _, rs := range in.RecordSets {
		name, _ := normName(rs.Name)
		if rs.Type == "SOA" || (rs.Type == "NS" && name == "example.com.") {
			continue
		}
		for _, v := range rs.ResourceRecords {
			rr, err := dns.NewRR(name + " 300 IN " + rs.Type + " " + v.Value)
			if err != nil {
				t.Fatal(err)
			}
			want[name+" "+rs.Type] = append(want[name+" "+rs.Type], rr)
		}
	}
	got := map[string][]dns.RR{}
	c := caddy.NewTestController("dns", res.Corefile)
	var owner string
	for c.Next() {
		switch c.Val() {
		case "record":
			owner = c.RemainingArgs()[0]
			continue
		case "ttl", "{", "}":
			c.RemainingArgs()
			continue
		}
		typ := c.Val()
		args := c.RemainingArgs()
		for _, rdata := range rebuild(t, typ, args) {
			rr, err := dns.NewRR(owner + " 300 IN " + typ + " " + rdata)
			if err != nil {
				t.Fatalf("%s %s: rebuilt %q: %v", owner, typ, rdata, err)
			}
			got[owner+" "+typ] = append(got[owner+" "+typ], rr)
		}
	}
	if len(got) != len(want) {
		t.Errorf("read back %d name/type pairs, want %d", len(got), len(want))
	}
	for k, w := range want {
		g := got[k]
		if len(g) != len(w) {
			t.Errorf("%s: read back %d values, want %d", k, len(g), len(w))
			continue
		}
		for i := range w {
			if !sameWire(t, g[i], w[i]) {
				t.Errorf("%s: read back\n%s\nwant\n%s", k, g[i], w[i])
			}
		}
	}
}

// sameWire reports whether two records pack to the same bytes: TXT strings that
// spell a quote \" and \034 are the same record.
func sameWire(t *testing.T, a, b dns.RR) bool {
	t.Helper()
	pa, pb := make([]byte, dns.Len(a)), make([]byte, dns.Len(b))
	na, errA := dns.PackRR(a, pa, 0, nil, false)
	nb, errB := dns.PackRR(b, pb, 0, nil, false)
	if errA != nil || errB != nil {
		t.Fatalf("pack: %v %v", errA, errB)
	}
	return string(pa[:na]) == string(pb[:nb])
}

// rebuild turns a member target's value tokens into presentation rdata, one per value.
func rebuild(t *testing.T, typ string, args []string) []string {
	t.Helper()
	strs := map[string][]int{"CAA": {2}, "NAPTR": {2, 3, 4}}[typ] // character-string fields
	n := fieldCount[typ]
	var out []string
	for len(args) > 0 && !keywords[args[0]] {
		if n == 0 { // TXT, SPF
			v := args[0]
			if !strings.HasPrefix(v, `"`) {
				v = `"` + v + `"`
			}
			out, args = append(out, v), args[1:]
			continue
		}
		if len(args) < n {
			t.Fatalf("%s: %d tokens left, a value has %d", typ, len(args), n)
		}
		f := append([]string(nil), args[:n]...)
		for _, i := range strs {
			f[i] = `"` + f[i] + `"`
		}
		out, args = append(out, strings.Join(f, " ")), args[n:]
	}
	return out
}

// TestErrors checks that what cannot be converted is refused with the record set's
// name, type and set identifier, and that nothing is returned.
func TestErrors(t *testing.T) {
	const checks = `{"HealthChecks":[{"Id":"hc1","HealthCheckConfig":{"Type":"TCP","IPAddress":"192.0.2.1","Port":80}}]}`
	tests := []struct {
		name, records, want string
	}{
		{"unknown type", `[{"Name":"x.example.com.","Type":"HINFO","TTL":60,"ResourceRecords":[{"Value":"a b"}]}]`,
			`record set x.example.com. HINFO: type "HINFO": not supported`},
		{"traffic policy", `[{"Name":"x.example.com.","Type":"A","SetIdentifier":"s","Weight":1,"TTL":60,"ResourceRecords":[{"Value":"192.0.2.1"}],"TrafficPolicyInstanceId":"tp-1"}]`,
			`record set x.example.com. A ("s"): created by traffic policy instance tp-1`},
		{"missing health check", `[{"Name":"x.example.com.","Type":"A","SetIdentifier":"s","Weight":1,"TTL":60,"ResourceRecords":[{"Value":"192.0.2.1"}],"HealthCheckId":"nope"}]`,
			`record set x.example.com. A ("s"): health check nope is not among the health checks read`},
		{"mixed policies", `[{"Name":"x.example.com.","Type":"A","SetIdentifier":"a","Weight":1,"TTL":60,"ResourceRecords":[{"Value":"192.0.2.1"}]},
			{"Name":"x.example.com.","Type":"A","SetIdentifier":"b","Failover":"PRIMARY","TTL":60,"ResourceRecords":[{"Value":"192.0.2.2"}]}]`,
			`record set x.example.com. A ("b"): routing policy failover, but the record set ("a") of the same name and type is weighted`},
		{"two policies in one set", `[{"Name":"x.example.com.","Type":"A","SetIdentifier":"a","Weight":1,"Region":"us-east-1","TTL":60,"ResourceRecords":[{"Value":"192.0.2.1"}]}]`,
			`record set x.example.com. A ("a"): routing policies weighted and latency at once`},
		{"bad value", `[{"Name":"x.example.com.","Type":"A","TTL":60,"ResourceRecords":[{"Value":"2001:db8::1"}]}]`,
			`record set x.example.com. A: invalid A value "2001:db8::1"`},
		{"bad MX", `[{"Name":"x.example.com.","Type":"MX","TTL":60,"ResourceRecords":[{"Value":"mail.example.com"}]}]`,
			`record set x.example.com. MX: invalid MX value "mail.example.com"`},
		{"TTL differs in a group", `[{"Name":"x.example.com.","Type":"A","SetIdentifier":"a","Weight":1,"TTL":60,"ResourceRecords":[{"Value":"192.0.2.1"}]},
			{"Name":"x.example.com.","Type":"A","SetIdentifier":"b","Weight":1,"TTL":300,"ResourceRecords":[{"Value":"192.0.2.2"}]}]`,
			`record set x.example.com. A ("b"): TTL 300, but the other record sets of this name and type have 60`},
		{"duplicate set identifier", `[{"Name":"x.example.com.","Type":"A","SetIdentifier":"a","Weight":1,"TTL":60,"ResourceRecords":[{"Value":"192.0.2.1"}]},
			{"Name":"x.example.com.","Type":"A","SetIdentifier":"a","Weight":2,"TTL":60,"ResourceRecords":[{"Value":"192.0.2.2"}]}]`,
			`record set x.example.com. A ("a"): SetIdentifier used twice`},
		{"outside the zone", `[{"Name":"example.net.","Type":"A","TTL":60,"ResourceRecords":[{"Value":"192.0.2.1"}]}]`,
			`record set example.net. A: name is not within the zone example.com.`},
		{"alias target without the type", `[{"Name":"x.example.com.","Type":"AAAA","AliasTarget":{"HostedZoneId":"Z","DNSName":"y.example.com.","EvaluateTargetHealth":true}},
			{"Name":"y.example.com.","Type":"A","TTL":60,"ResourceRecords":[{"Value":"192.0.2.1"}]}]`,
			`record set x.example.com. AAAA: alias to y.example.com., which has no AAAA record set in the zone`},
		{"unknown region", `[{"Name":"x.example.com.","Type":"A","SetIdentifier":"a","Region":"moon-1","TTL":60,"ResourceRecords":[{"Value":"192.0.2.1"}]}]`,
			`record set x.example.com. A ("a"): region "moon-1": not an AWS region`},
		{"cidr location without blocks", `[{"Name":"x.example.com.","Type":"A","SetIdentifier":"a","CidrRoutingConfig":{"CollectionId":"c1","LocationName":"lab"},"TTL":60,"ResourceRecords":[{"Value":"192.0.2.1"}]}]`,
			`record set x.example.com. A ("a"): CIDR location "lab" of collection c1 has no blocks`},
		{"local zone group", `[{"Name":"x.example.com.","Type":"A","SetIdentifier":"a","GeoProximityLocation":{"LocalZoneGroup":"us-east-1-bos-1"},"TTL":60,"ResourceRecords":[{"Value":"192.0.2.1"}]}]`,
			`record set x.example.com. A ("a"): GeoProximityLocation LocalZoneGroup us-east-1-bos-1: Local Zones are not supported`},
		{"CNAME beside other types", `[{"Name":"example.com.","Type":"A","AliasTarget":{"HostedZoneId":"Z","DNSName":"d1.cloudfront.net.","EvaluateTargetHealth":false}},
			{"Name":"example.com.","Type":"MX","TTL":300,"ResourceRecords":[{"Value":"10 mail.example.com."}]}]`,
			`record set example.com. A: the CNAME that answers its alias would share the name with the MX record set`},
		{"unknown field", `{"ResourceRecordSets":[{"Name":"x.example.com.","Type":"A","TTL":60,"ResourceRecords":[{"Value":"192.0.2.1"}],"Routing":"new"}]}`,
			`record set x.example.com. A: json: unknown field "Routing"`},
		{"malformed JSON", `{"ResourceRecordSets":[{"Name":"x.example.com.",}]}`,
			`record sets: malformed JSON at byte 49`},
		{"delete in a change batch", `{"Changes":[{"Action":"DELETE","ResourceRecordSet":{"Name":"x.example.com.","Type":"A"}}]}`,
			`change 0: action "DELETE", expected CREATE or UPSERT`},
		{"multivalue alias", `[{"Name":"x.example.com.","Type":"A","SetIdentifier":"a","MultiValueAnswer":true,"AliasTarget":{"HostedZoneId":"Z","DNSName":"y.example.com.","EvaluateTargetHealth":true}}]`,
			`record set x.example.com. A ("a"): a multivalue record set cannot be an alias`},
		{"bad geolocation code", `[{"Name":"x.example.com.","Type":"A","SetIdentifier":"a","GeoLocation":{"CountryCode":"U S"},"TTL":60,"ResourceRecords":[{"Value":"192.0.2.1"}]}]`,
			`record set x.example.com. A ("a"): GeoLocation`},
		{"truncated listing", `{"ResourceRecordSets":[],"IsTruncated":true,"NextRecordName":"m.example.com."}`,
			`the listing is truncated at "m.example.com."`},
	}
	hcs, err := ReadHealthChecks(strings.NewReader(checks))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sets, err := ReadRecordSets(strings.NewReader(tc.records))
			var res *Result
			if err == nil {
				res, err = Convert(Input{Zone: "example.com", RecordSets: sets, HealthChecks: hcs})
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v\nwant it to contain %q", err, tc.want)
			}
			if res != nil {
				t.Errorf("returned text with the error:\n%s", res.Corefile)
			}
		})
	}
}

// TestCheckErrors checks that a health check that cannot be converted is refused
// with its ID.
func TestCheckErrors(t *testing.T) {
	rec := `[{"Name":"x.example.com.","Type":"A","SetIdentifier":"a","Weight":1,"TTL":60,"ResourceRecords":[{"Value":"192.0.2.1"}],"HealthCheckId":"hc1"}]`
	tests := []struct{ name, checks, want string }{
		{"tcp without port", `[{"Id":"hc1","HealthCheckConfig":{"Type":"TCP","IPAddress":"192.0.2.1"}}]`, "health check hc1: TCP needs a Port"},
		{"unknown child", `[{"Id":"hc1","HealthCheckConfig":{"Type":"CALCULATED","ChildHealthChecks":["hc9"]}}]`, "health check hc1: child health check hc9 is not among"},
		{"bad interval", `[{"Id":"hc1","HealthCheckConfig":{"Type":"HTTP","IPAddress":"192.0.2.1","RequestInterval":20}}]`, "health check hc1: RequestInterval 20, expected 10 or 30"},
		{"unknown type", `[{"Id":"hc1","HealthCheckConfig":{"Type":"GOPHER","IPAddress":"192.0.2.1"}}]`, `health check hc1: Type "GOPHER": not supported`},
		{"unknown field", `[{"Id":"hc1","HealthCheckConfig":{"Type":"HTTP","IPAddress":"192.0.2.1","Magic":true}}]`, `health check hc1: json: unknown field "Magic"`},
		{"id with a comment", `[{"Id":"hc#2","HealthCheckConfig":{"Type":"TCP","IPAddress":"192.0.2.2","Port":80}},{"Id":"hc1","HealthCheckConfig":{"Type":"CALCULATED","ChildHealthChecks":["hc#2"]}}]`, "health check hc#2: Id: not usable as a check name"},
		{"no target", `[{"Id":"hc1","HealthCheckConfig":{"Type":"HTTP"}}]`, "health check hc1: HTTP needs an IPAddress or a FullyQualifiedDomainName"},
	}
	sets, err := ReadRecordSets(strings.NewReader(rec))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			hcs, err := ReadHealthChecks(strings.NewReader(tc.checks))
			if err == nil {
				_, err = Convert(Input{Zone: "example.com.", RecordSets: sets, HealthChecks: hcs})
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v\nwant it to contain %q", err, tc.want)
			}
		})
	}
}

// TestCIDRBlockErrors checks that blocks Route 53 would not hold are refused.
func TestCIDRBlockErrors(t *testing.T) {
	for _, b := range []string{"192.0.2.1/32", "2001:db8::/64", "192.0.2.0", "0.0.0.0/0"} {
		_, err := Convert(Input{Zone: "example.com.", CIDRBlocks: map[string][]CidrBlock{"": {{CidrBlock: b, LocationName: "lab"}}}})
		if err == nil || !strings.Contains(err.Error(), `cidr block "`+b+`" of location lab`) {
			t.Errorf("%s: error %v", b, err)
		}
	}
}

// TestBlockTTL checks that BlockTTL leaves every ttl line out.
func TestBlockTTL(t *testing.T) {
	in := readFixture(t, "tree")
	in.BlockTTL = true
	res, err := Convert(in)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(res.Corefile, "ttl ") {
		t.Errorf("ttl line with BlockTTL:\n%s", res.Corefile)
	}
}

// BenchmarkConvert10k converts a zone of 10,000 weighted record sets with health
// checks, from JSON to text.
func BenchmarkConvert10k(b *testing.B) {
	var rs, hc strings.Builder
	rs.WriteString(`{"ResourceRecordSets":[`)
	hc.WriteString(`{"HealthChecks":[`)
	for i := range 10000 {
		if i > 0 {
			rs.WriteString(",")
			hc.WriteString(",")
		}
		fmt.Fprintf(&rs, `{"Name":"n%d.example.com.","Type":"A","SetIdentifier":"s%d","Weight":%d,"TTL":60,"ResourceRecords":[{"Value":"192.0.%d.%d"}],"HealthCheckId":"hc%d"}`,
			i/2, i%2, i%256, i/256%256, i%256, i)
		fmt.Fprintf(&hc, `{"Id":"hc%d","HealthCheckConfig":{"Type":"HTTP","IPAddress":"192.0.%d.%d","Port":80,"ResourcePath":"/health"}}`, i, i/256%256, i%256)
	}
	rs.WriteString(`]}`)
	hc.WriteString(`]}`)
	b.ReportAllocs()
	for b.Loop() {
		sets, err := ReadRecordSets(strings.NewReader(rs.String()))
		if err != nil {
			b.Fatal(err)
		}
		checks, err := ReadHealthChecks(strings.NewReader(hc.String()))
		if err != nil {
			b.Fatal(err)
		}
		if _, err := Convert(Input{Zone: "example.com.", RecordSets: sets, HealthChecks: checks}); err != nil {
			b.Fatal(err)
		}
	}
}

// TestReadForms checks that every document shape the aws CLI prints for the same
// record sets and health checks reads the same.
func TestReadForms(t *testing.T) {
	const set = `{"Name":"example.com.","Type":"A","TTL":60,"ResourceRecords":[{"Value":"192.0.2.44"}]}`
	forms := map[string]string{
		"list-resource-record-sets":         `{"ResourceRecordSets":[` + set + `],"IsTruncated":false,"MaxItems":"100"}`,
		"change batch":                      `{"Comment":"c","Changes":[{"Action":"CREATE","ResourceRecordSet":` + set + `}]}`,
		"change-resource-record-sets input": `{"HostedZoneId":"Z3M3LMPEXAMPLE","ChangeBatch":{"Changes":[{"Action":"UPSERT","ResourceRecordSet":` + set + `}]}}`,
		"array":                             `[` + set + `]`,
	}
	for name, doc := range forms {
		sets, err := ReadRecordSets(strings.NewReader(doc))
		if err != nil || len(sets) != 1 || sets[0].Name != "example.com." || *sets[0].TTL != 60 || sets[0].ResourceRecords[0].Value != "192.0.2.44" {
			t.Errorf("%s: read %+v, %v", name, sets, err)
		}
	}
	const check = `{"Id":"hc1","CallerReference":"r","HealthCheckConfig":{"Type":"TCP","IPAddress":"192.0.2.1","Port":80},"HealthCheckVersion":1}`
	for name, doc := range map[string]string{
		"list-health-checks": `{"HealthChecks":[` + check + `],"IsTruncated":false,"MaxItems":"100"}`,
		"get-health-check":   `{"HealthCheck":` + check + `}`,
		"array":              `[` + check + `]`,
	} {
		hcs, err := ReadHealthChecks(strings.NewReader(doc))
		if err != nil || len(hcs) != 1 || hcs[0].Id != "hc1" || *hcs[0].HealthCheckConfig.Port != 80 {
			t.Errorf("%s: read %+v, %v", name, hcs, err)
		}
	}
	for name, doc := range map[string]string{
		"list-cidr-blocks": `{"CidrBlocks":[{"CidrBlock":"192.0.2.0/24","LocationName":"office"}]}`,
		"array":            `[{"CidrBlock":"192.0.2.0/24","LocationName":"office"}]`,
	} {
		blocks, err := ReadCIDRBlocks(strings.NewReader(doc))
		if err != nil || len(blocks) != 1 || blocks[0].LocationName != "office" {
			t.Errorf("%s: read %+v, %v", name, blocks, err)
		}
	}
}

// TestZoneRequired checks that a zone without an SOA record set needs -zone.
func TestZoneRequired(t *testing.T) {
	sets, err := ReadRecordSets(strings.NewReader(`[{"Name":"x.example.com.","Type":"A","TTL":60,"ResourceRecords":[{"Value":"192.0.2.1"}]}]`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Convert(Input{RecordSets: sets}); err == nil || !strings.Contains(err.Error(), "no zone given and no SOA record set") {
		t.Errorf("error %v, want one asking for the zone", err)
	}
}

// FuzzToken checks that whatever token writes reads back, through the Corefile
// lexer, as exactly one token holding the same string.
func FuzzToken(f *testing.F) {
	for _, s := range []string{"plain", "two words", `say "hi"`, "a#b", "{x}", "", `back\slash`, `end\`, "tab\there", "line\nbreak", `\"`, "}"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		tok, err := token(s)
		if err != nil {
			return
		}
		c := caddy.NewTestController("dns", "k "+tok+" end")
		c.Next()
		args := c.RemainingArgs()
		if len(args) != 2 || args[0] != s || args[1] != "end" {
			t.Errorf("token(%q) = %s, read back as %q", s, tok, args)
		}
	})
}

// FuzzTXT checks that any TXT value, written as a member target and read back by
// the documented rules, is the same record.
func FuzzTXT(f *testing.F) {
	for _, s := range []string{"v=spf1 -all", `say "hi"`, "", "id", "}", `a\b`, "tab\tand\nnewline", "ünïcode", "#not a comment", "a;b"} {
		f.Add(s, "")
		f.Add(s, "second")
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		want := &dns.TXT{Hdr: dns.RR_Header{Name: "x.", Rrtype: dns.TypeTXT, Class: dns.ClassINET, Ttl: 300}, Txt: []string{a}}
		if b != "" {
			want.Txt = append(want.Txt, b)
		}
		if len(a) > 255 || len(b) > 255 {
			return
		}
		rdata := strings.TrimPrefix(want.String(), want.Hdr.String())
		tok, err := value("TXT", rdata)
		if err != nil {
			t.Fatalf("value(%s): %v", rdata, err)
		}
		c := caddy.NewTestController("dns", "TXT "+tok+" id x")
		c.Next()
		vals := rebuild(t, "TXT", c.RemainingArgs())
		if len(vals) != 1 {
			t.Fatalf("%s read back as %d values", tok, len(vals))
		}
		got, err := dns.NewRR("x. 300 IN TXT " + vals[0])
		if err != nil {
			t.Fatalf("%s: rebuilt %s: %v", tok, vals[0], err)
		}
		if !sameWire(t, got, want) {
			t.Errorf("%s read back as %s, want %s", tok, got, want)
		}
	})
}
