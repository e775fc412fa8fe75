package healthroute

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coredns/caddy"

	"github.com/healthroute/healthroute/control"
	"github.com/healthroute/healthroute/internal/coretest"
	"github.com/healthroute/healthroute/route53"
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
	dir := filepath.Join(t.TempDir(), "state")
	n, err := control.Open(control.Config{Name: "local", Dir: dir}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	coretest.WaitUntil(t, 10*time.Second, "the node leads", func() bool { return n.Status().CanChange }, func() string { return n.Status().State })
	cmd := &control.APICommand{ChangeID: "C1", Zone: "example.org."}
	for _, rs := range sets {
		cmd.Records = append(cmd.Records, control.RecordChange{Action: "CREATE", RecordSet: rs})
	}
	if err := n.Change(context.Background(), control.Request{Member: "local", API: cmd}); err != nil {
		t.Fatal(err)
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
		case rs.Name == "w.example.org." && rs.API && rs.Policy == policyWeighted && len(rs.Members) == 2:
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
	if _, err := parse(pc); err == nil || !strings.Contains(err.Error(), "Testfile:11 - Error during parsing: record w.example.org.: the name holds API-managed record sets") {
		t.Errorf("a Corefile record at an API-managed name: %v, want refused naming it", err)
	}
}
