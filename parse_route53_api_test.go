package healthroute

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coredns/caddy"

	"github.com/healthroute/healthroute/control"
	"github.com/healthroute/healthroute/internal/coretest"
	"github.com/healthroute/healthroute/r53api"
	"github.com/healthroute/healthroute/route53"
	"github.com/healthroute/healthroute/routing"
)

func TestRoute53APIParseErrors(t *testing.T) {
	dir := t.TempDir()
	keys := filepath.Join(dir, "keys")
	os.WriteFile(keys, []byte("AKIA1 secretsecretsecret1\n"), 0o600)
	bad := filepath.Join(dir, "bad")
	os.WriteFile(bad, []byte("AKIA1\n"), 0o600)
	checkParseErrors(t, []parseErrorCase{
		{"no address", "healthroute {\nroute53_api\n}", 2, "Wrong argument count"},
		{"bad address", "healthroute {\nroute53_api localhost {\naccess_keys " + keys + "\n}\n}", 2, "route53_api: invalid address 'localhost', expected HOST:PORT"},
		{"no access keys", "healthroute {\nroute53_api 127.0.0.1:8054\n}", 2, "route53_api: expected a block with 'access_keys FILE'"},
		{"missing key file", "healthroute {\nroute53_api 127.0.0.1:8054 {\naccess_keys " + filepath.Join(dir, "nope") + "\n}\n}", 3, "route53_api: access_keys: open"},
		{"bad key file", "healthroute {\nroute53_api 127.0.0.1:8054 {\naccess_keys " + bad + "\n}\n}", 3, bad + ":1: a line of 1 fields, expected ACCESS_KEY_ID SECRET_ACCESS_KEY"},
		{"unknown property", "healthroute {\nroute53_api 127.0.0.1:8054 {\naccess_keys " + keys + "\ntls on\n}\n}", 4, "route53_api: unknown property 'tls'"},
		{"hosted_zones with a value", "healthroute {\nroute53_api 127.0.0.1:8054 {\naccess_keys " + keys + "\nhosted_zones yes\n}\n}", 4, "route53_api: hosted_zones takes no value, it has 1"},
		{"rate out of range", "healthroute {\nroute53_api 127.0.0.1:8054 {\naccess_keys " + keys + "\nrate 0\n}\n}", 4, "route53_api: rate: invalid value '0', expected a number from 1 to 100000"},
		{"bad max_body", "healthroute {\nroute53_api 127.0.0.1:8054 {\naccess_keys " + keys + "\nmax_body lots\n}\n}", 4, "route53_api: max_body: invalid value 'lots'"},
		{"given twice", "healthroute {\nroute53_api 127.0.0.1:8054 {\naccess_keys " + keys + "\n}\nroute53_api 127.0.0.1:8055 {\naccess_keys " + keys + "\n}\n}", 5, "route53_api is given twice (first at line 2)"},
		{"fleet without voters", "healthroute {\nroute53_api 127.0.0.1:8054 {\naccess_keys " + keys + "\n}\nfleet {\nbind 127.0.0.1:7946\njoin 127.0.0.1:7956\nname a\ninsecure\n}\n}", 2, "route53_api: in a fleet the API's record sets live in the replicated state: expected a controls block listing the voters"},
	})
}

// apiStateDir writes, through a real single-voter node, a data directory whose
// state holds the API record sets of example.org. given.
func apiStateDir(t *testing.T, sets ...route53.ResourceRecordSet) string {
	t.Helper()
	cmd := &control.APICommand{ChangeID: "C1", Zone: "example.org."}
	for _, rs := range sets {
		cmd.Records = append(cmd.Records, control.RecordChange{Action: "CREATE", RecordSet: rs})
	}
	return apiStateDirOf(t, cmd)
}

// apiStateDirOf writes a data directory whose state is what the API commands
// made, through a real single-voter node.
func apiStateDirOf(t *testing.T, cmds ...*control.APICommand) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "state")
	n, err := control.Open(control.Config{Name: "local", Dir: dir}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	coretest.WaitUntil(t, 10*time.Second, "the node leads", func() bool { return n.Status().CanChange }, func() string { return n.Status().State })
	for _, cmd := range cmds {
		if err := n.Change(context.Background(), control.Request{Member: "local", API: cmd}); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestRoute53APIRecordsLoadMarkedAndConflictsRefused(t *testing.T) {
	ttl, w1, w2 := int64(30), int64(1), int64(2)
	dir := apiStateDir(t,
		route53.ResourceRecordSet{Name: "w.example.org.", Type: "A", SetIdentifier: "a", Weight: &w1, TTL: &ttl, ResourceRecords: []route53.ResourceRecord{{Value: "192.0.2.1"}}},
		route53.ResourceRecordSet{Name: "w.example.org.", Type: "A", SetIdentifier: "b", Weight: &w2, TTL: &ttl, ResourceRecords: []route53.ResourceRecord{{Value: "192.0.2.2"}}})
	keys := filepath.Join(t.TempDir(), "keys")
	os.WriteFile(keys, []byte("AKIA1 secretsecretsecret1\n"), 0o600)
	block := "healthroute {\nroute53_api 127.0.0.1:8054 {\naccess_keys " + keys + "\n}\ncontrols {\ndata_dir " + dir + "\n}\nrecord static.example.org. simple {\nA 192.0.2.9\n}\n%s}"
	cfg := mustParse(t, strings.Replace(block, "%s", "", 1))
	var api, corefile int
	for _, rs := range cfg.Records {
		switch {
		case rs.Name == "w.example.org." && rs.API && rs.Policy == routing.PolicyWeighted && len(rs.Members) == 2:
			api++
		case rs.Name == "static.example.org." && !rs.API:
			corefile++
		}
	}
	if api != 1 || corefile != 1 || cfg.R53API.gen == 0 {
		t.Errorf("records %d API-managed weighted w.example.org., %d Corefile static.example.org. (gen %d); want 1 and 1", api, corefile, cfg.R53API.gen)
	}
	if z := cfg.R53API.zones(cfg); len(z) != 1 || z[0].Corefile["static.example.org."] != "Testfile:8" || z[0].Corefile["w.example.org."] != "" {
		t.Errorf("the API's zone %+v: want static.example.org. read-only (Testfile:8) and w.example.org. not", z)
	}
	c := strings.Replace(block, "%s", "record w.example.org. simple {\nA 192.0.2.3\n}\n", 1)
	pc := caddy.NewTestController("dns", c)
	pc.ServerBlockKeys = []string{"example.org."}
	if _, err := parse(pc, nil); err == nil || !strings.Contains(err.Error(), "Testfile:11 - Error during parsing: record w.example.org.: the name holds API-managed record sets") {
		t.Errorf("a Corefile record at an API-managed name: %v, want refused naming it", err)
	}
}

// TestCorefileRecordSetsListAsRoute53Would checks the Route 53 form of Corefile
// record sets that ListResourceRecordSets shows beside the API's.
func TestCorefileRecordSetsListAsRoute53Would(t *testing.T) {
	cfg := mustParse(t, `healthroute {
    ttl 120
    check web tcp 192.0.2.1:443
    record w.example.org. weighted {
        weight 3 A 192.0.2.1 192.0.2.2 check web id one
        weight 0 AAAA 2001:db8::1 id two
    }
    record g.example.org. geolocation {
        country DE A 192.0.2.3 id de
        subdivision US-CA A 192.0.2.4 id ca
        default A 192.0.2.5 id rest
    }
    record www.example.org. failover {
        primary alias w.example.org. evaluate_target_health id p
        secondary A 198.51.100.1 id s
    }
    record example.org. simple {
        MX 10 mx1.example.net. 20 mx2.example.net.
    }
}`)
	got := map[string]string{}
	for _, rs := range corefileSets(cfg, "example.org.") {
		b, _ := json.Marshal(rs)
		got[rs.Name+" "+rs.Type+" "+rs.SetIdentifier] = string(b)
	}
	want := map[string]string{
		"w.example.org. A one":    `{"Name":"w.example.org.","Type":"A","SetIdentifier":"one","Weight":3,"TTL":120,"ResourceRecords":[{"Value":"192.0.2.1"},{"Value":"192.0.2.2"}],"HealthCheckId":"web"}`,
		"w.example.org. AAAA two": `{"Name":"w.example.org.","Type":"AAAA","SetIdentifier":"two","Weight":0,"TTL":120,"ResourceRecords":[{"Value":"2001:db8::1"}]}`,
		"g.example.org. A de":     `{"Name":"g.example.org.","Type":"A","SetIdentifier":"de","GeoLocation":{"CountryCode":"DE"},"TTL":120,"ResourceRecords":[{"Value":"192.0.2.3"}]}`,
		"g.example.org. A ca":     `{"Name":"g.example.org.","Type":"A","SetIdentifier":"ca","GeoLocation":{"CountryCode":"US","SubdivisionCode":"CA"},"TTL":120,"ResourceRecords":[{"Value":"192.0.2.4"}]}`,
		"g.example.org. A rest":   `{"Name":"g.example.org.","Type":"A","SetIdentifier":"rest","GeoLocation":{"CountryCode":"*"},"TTL":120,"ResourceRecords":[{"Value":"192.0.2.5"}]}`,
		"www.example.org. A p":    `{"Name":"www.example.org.","Type":"A","SetIdentifier":"p","Failover":"PRIMARY","AliasTarget":{"HostedZoneId":"` + r53api.ZoneID("example.org.") + `","DNSName":"w.example.org.","EvaluateTargetHealth":true}}`,
		"www.example.org. A s":    `{"Name":"www.example.org.","Type":"A","SetIdentifier":"s","Failover":"SECONDARY","TTL":120,"ResourceRecords":[{"Value":"198.51.100.1"}]}`,
		"example.org. MX ":        `{"Name":"example.org.","Type":"MX","TTL":120,"ResourceRecords":[{"Value":"10 mx1.example.net."},{"Value":"20 mx2.example.net."}]}`,
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%s:\n got %s\nwant %s", k, got[k], w)
		}
	}
	if soa := got["example.org. SOA "]; !strings.Contains(soa, `"Type":"SOA","TTL":120,"ResourceRecords":[{"Value":"example.org. hostmaster.example.org. `) {
		t.Errorf("the zone's SOA: %s", soa)
	}
	delete(got, "example.org. SOA ")
	if len(got) != len(want) {
		t.Errorf("%d record sets, want %d: %v", len(got), len(want), got)
	}
}

// TestRoute53APICheckSharedByTwoZones loads a block of two zones whose API
// record sets use one health check (with options, so its converted line has a
// block): the check is defined once and both zones' members use it.
func TestRoute53APICheckSharedByTwoZones(t *testing.T) {
	interval, port := int64(10), int64(8080)
	hc := &control.APIHealthCheck{HealthCheck: route53.HealthCheck{Id: "3f2a-shared", HealthCheckConfig: route53.HealthCheckConfig{
		Type: "HTTP", IPAddress: "192.0.2.7", Port: &port, ResourcePath: "/health", RequestInterval: &interval}}, CallerReference: "r"}
	ttl := int64(30)
	set := func(name string) control.RecordChange {
		return control.RecordChange{Action: "CREATE", RecordSet: route53.ResourceRecordSet{Name: name, Type: "A", TTL: &ttl, SetIdentifier: "one", Weight: &ttl,
			ResourceRecords: []route53.ResourceRecord{{Value: "192.0.2.7"}}, HealthCheckId: "3f2a-shared"}}
	}
	dir := apiStateDirOf(t, &control.APICommand{CreateCheck: hc},
		&control.APICommand{ChangeID: "C1", Zone: "example.org.", Records: []control.RecordChange{set("a.example.org.")}},
		&control.APICommand{ChangeID: "C2", Zone: "example.net.", Records: []control.RecordChange{set("b.example.net.")}})
	keys := filepath.Join(t.TempDir(), "keys")
	os.WriteFile(keys, []byte("AKIA1 secretsecretsecret1\n"), 0o600)
	cfg := mustParse(t, "healthroute example.org. example.net. {\nroute53_api 127.0.0.1:8054 {\naccess_keys "+keys+"\n}\ncontrols {\ndata_dir "+dir+"\n}\n}")
	spec := cfg.Checks["3f2a-shared"]
	if spec == nil || len(cfg.Checks) != 1 {
		t.Fatalf("checks %v, want the shared check alone", cfg.Checks)
	}
	users := 0
	for _, rs := range cfg.Records {
		for _, m := range rs.Members {
			if m.Check == spec && rs.API {
				users++
			}
		}
	}
	if users != 2 {
		t.Errorf("%d API-managed members use the shared check, want 2 (one per zone)", users)
	}
}
