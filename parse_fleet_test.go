package healthroute

import (
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coredns/caddy"

	"github.com/healthroute/healthroute/health/fleet"
)

// keyFiles writes a good key (32 bytes, as `openssl rand -base64 32` prints) and a
// bad one, and returns their paths.
func keyFiles(t *testing.T) (good, bad string) {
	t.Helper()
	dir := t.TempDir()
	good, bad = filepath.Join(dir, "gossip.key"), filepath.Join(dir, "bad.key")
	if err := os.WriteFile(good, []byte("MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bad, []byte("c2hvcnQ=\n"), 0o600); err != nil { // "short"
		t.Fatal(err)
	}
	return good, bad
}

func TestParseFleet(t *testing.T) {
	good, _ := keyFiles(t)
	input := `healthroute example.org {
fleet {
  bind 127.0.0.1:7946
  advertise 192.0.2.10:17946
  join 127.0.0.2:7946 127.0.0.3:7946
  name dns-a
  key_file ` + good + `
  quorum 25%
  profile lan
  heartbeat 500ms
  suspicion 2s
  max_connections 64 8
}
}`
	cfg, err := parse(caddy.NewTestController("dns", input), nil)
	if err != nil {
		t.Fatal(err)
	}
	f := cfg.Fleet
	if f == nil {
		t.Fatal("no fleet")
	}
	if f.Bind != netip.MustParseAddrPort("127.0.0.1:7946") || f.Advertise != netip.MustParseAddrPort("192.0.2.10:17946") || len(f.Join) != 2 || f.Join[1] != netip.MustParseAddrPort("127.0.0.3:7946") ||
		f.Name != "dns-a" || string(f.Key) != "0123456789abcdef0123456789abcdef" || f.Quorum != 25 || f.Insecure ||
		f.Profile != fleet.LAN || f.Beat != 500*time.Millisecond || f.Suspicion != 2*time.Second || f.Limits.Streams != 64 || f.Limits.StreamsPerPeer != 8 {
		t.Errorf("fleet config: %+v", f)
	}

	cfg, err = parse(caddy.NewTestController("dns", "healthroute example.org {\nfleet {\ninsecure\n}\n}"), nil)
	if err != nil {
		t.Fatal(err)
	}
	host, _ := os.Hostname()
	if f := cfg.Fleet; f.Quorum != 18 || !f.Insecure || f.Key != nil || f.Name != host || f.Bind.Port() != 7946 || f.Advertise.IsValid() ||
		f.Profile != fleet.WAN || f.Beat != 0 || f.Suspicion != 0 || f.Limits != (fleet.Limits{}) {
		t.Errorf("defaults: %+v", f)
	}

	// An IPv4 address written as IPv6 is advertised as IPv4, as memberlist compares them.
	cfg, err = parse(caddy.NewTestController("dns", "healthroute example.org {\nfleet {\ninsecure\nadvertise [::ffff:10.0.0.7]:7946\n}\n}"), nil)
	if err != nil || cfg.Fleet.Advertise != netip.MustParseAddrPort("10.0.0.7:7946") {
		t.Errorf("advertise [::ffff:10.0.0.7]:7946: %v, %v", cfg.Fleet, err)
	}

	cfg, err = parse(caddy.NewTestController("dns", "healthroute example.org"), nil)
	if err != nil || cfg.Fleet != nil {
		t.Errorf("without fleet: %+v, %v", cfg.Fleet, err)
	}
}

func TestParseFleetErrors(t *testing.T) {
	good, bad := keyFiles(t)
	checkParseErrors(t, []parseErrorCase{
		{"no key", "healthroute {\nfleet {\nbind 127.0.0.1:7946\n}\n}", 2, "fleet: key_file: missing, expected a key file, or insecure"},
		{"key and insecure", "healthroute {\nfleet {\nkey_file " + good + "\ninsecure\n}\n}", 2, "fleet: insecure: conflicts with key_file"},
		{"missing key file", "healthroute {\nfleet {\nkey_file /nonexistent/gossip.key\n}\n}", 3, "fleet: key_file: cannot read '/nonexistent/gossip.key'"},
		{"short key", "healthroute {\nfleet {\nkey_file " + bad + "\n}\n}", 3, "fleet: key_file: invalid key in '" + bad + "', expected base64 of 16, 24 or 32 bytes"},
		{"bad bind", "healthroute {\nfleet {\ninsecure\nbind localhost\n}\n}", 4, "fleet: bind: invalid value 'localhost', expected ADDRESS:PORT"},
		{"bind port 0", "healthroute {\nfleet {\ninsecure\nbind 127.0.0.1:0\n}\n}", 4, "fleet: bind: invalid value '127.0.0.1:0'"},
		{"advertise a host name", "healthroute {\nfleet {\ninsecure\nadvertise dns-a.example.org:7946\n}\n}", 4, "fleet: advertise: invalid value 'dns-a.example.org:7946', expected ADDRESS:PORT, the IP address and port the other members reach this one at"},
		{"advertise without port", "healthroute {\nfleet {\ninsecure\nadvertise 10.0.0.7\n}\n}", 4, "fleet: advertise: invalid value '10.0.0.7', expected ADDRESS:PORT"},
		{"advertise port 0", "healthroute {\nfleet {\ninsecure\nadvertise 10.0.0.7:0\n}\n}", 4, "fleet: advertise: invalid value '10.0.0.7:0', expected ADDRESS:PORT"},
		{"advertise 0.0.0.0", "healthroute {\nfleet {\ninsecure\nadvertise 0.0.0.0:7946\n}\n}", 4, "fleet: advertise: invalid value '0.0.0.0:7946', expected the address of this member as the others reach it, not 0.0.0.0"},
		{"advertise ::", "healthroute {\nfleet {\ninsecure\nadvertise [::]:7946\n}\n}", 4, "fleet: advertise: invalid value '[::]:7946', expected the address of this member as the others reach it, not ::"},
		{"advertise multicast", "healthroute {\nfleet {\ninsecure\nadvertise 224.0.0.1:7946\n}\n}", 4, "not 224.0.0.1"},
		{"advertise with zone", "healthroute {\nfleet {\ninsecure\nadvertise [fe80::1%eth0]:7946\n}\n}", 4, "fleet: advertise: invalid value '[fe80::1%eth0]:7946', expected an address without a zone (%eth0)"},
		{"advertise twice", "healthroute {\nfleet {\ninsecure\nadvertise 10.0.0.7:7946\nadvertise 10.0.0.8:7946\n}\n}", 5, "fleet: advertise: given twice"},
		{"advertise two addresses", "healthroute {\nfleet {\ninsecure\nadvertise 10.0.0.7:7946 10.0.0.8:7946\n}\n}", 4, "Wrong argument count"},
		{"bad join", "healthroute {\nfleet {\ninsecure\njoin 127.0.0.2:7946 127.0.0.3\n}\n}", 4, "fleet: join: invalid value '127.0.0.3', expected ADDRESS:PORT"},
		{"join without address", "healthroute {\nfleet {\ninsecure\njoin\n}\n}", 4, "Wrong argument count"},
		{"quorum without %", "healthroute {\nfleet {\ninsecure\nquorum 18\n}\n}", 4, "fleet: quorum: invalid value '18', expected a percentage from 0% to 99%"},
		{"quorum 100%", "healthroute {\nfleet {\ninsecure\nquorum 100%\n}\n}", 4, "fleet: quorum: invalid value '100%'"},
		{"name too long", "healthroute {\nfleet {\ninsecure\nname " + strings.Repeat("a", 256) + "\n}\n}", 4, "fleet: name: invalid value"},
		{"insecure with argument", "healthroute {\nfleet {\ninsecure yes\n}\n}", 3, "Wrong argument count"},
		{"unknown property", "healthroute {\nfleet {\ninsecure\ngossip fast\n}\n}", 4, "fleet: unknown property 'gossip'"},
		{"arguments", "healthroute {\nfleet 127.0.0.1:7946 {\ninsecure\n}\n}", 2, "Wrong argument count"},
		{"twice", "healthroute {\nfleet {\ninsecure\n}\nfleet {\ninsecure\n}\n}", 5, "fleet is defined twice"},
		{"bad profile", "healthroute {\nfleet {\ninsecure\nprofile metro\n}\n}", 4, "fleet: profile: invalid value 'metro', expected lan or wan"},
		{"heartbeat too short", "healthroute {\nfleet {\ninsecure\nheartbeat 10ms\n}\n}", 4, "fleet: heartbeat: invalid duration '10ms', expected 100ms to 10s"},
		{"heartbeat not a duration", "healthroute {\nfleet {\ninsecure\nheartbeat often\n}\n}", 4, "fleet: heartbeat: invalid duration 'often'"},
		{"suspicion too long", "healthroute {\nfleet {\ninsecure\nsuspicion 1h\n}\n}", 4, "fleet: suspicion: invalid duration '1h', expected 300ms to 10m0s"},
		{"suspicion under 3 heartbeats", "healthroute {\nfleet {\ninsecure\nsuspicion 4s\nheartbeat 2s\n}\n}", 4, "fleet: suspicion: 4s is less than 3 heartbeats (6s)"},
		{"suspicion under 3 default heartbeats", "healthroute {\nfleet {\ninsecure\nsuspicion 2s\n}\n}", 4, "fleet: suspicion: 2s is less than 3 heartbeats (3s)"},
		{"repeated option", "healthroute {\nfleet {\ninsecure\nquorum 20%\nquorum 30%\n}\n}", 5, "fleet: quorum: given twice"},
		{"max_connections zero", "healthroute {\nfleet {\ninsecure\nmax_connections 0\n}\n}", 4, "fleet: max_connections: invalid value '0', expected a number from 1 to 4096"},
		{"max_connections per address above total", "healthroute {\nfleet {\ninsecure\nmax_connections 8 16\n}\n}", 4, "fleet: max_connections: 16 per address is more than 8 in all"},
		{"max_connections three values", "healthroute {\nfleet {\ninsecure\nmax_connections 8 4 2\n}\n}", 4, "Wrong argument count"},
	})
}

func TestRegistryFleet(t *testing.T) {
	r := &registry{}
	fc := &fleet.Config{Name: "dns-a", Bind: netip.MustParseAddrPort("127.0.0.1:0"), Insecure: true, Quorum: 18}
	cfg := &blockConfig{Fleet: fc}
	s := r.acquire(cfg)
	f := r.fleet()
	if f == nil || s.Aggregator != f || f.Name() != "dns-a" || len(f.Members()) != 1 {
		t.Fatalf("fleet %v, aggregator %v", f, s.Aggregator)
	}
	if r.acquire(cfg) != s || r.fleet() != f {
		t.Fatal("a second block must share the scheduler and the fleet")
	}
	r.release(cfg)
	r.release(cfg)
	if r.fleet() != nil {
		t.Fatal("the last release must stop the fleet")
	}
	// A fleet that cannot bind leaves the instance judging alone.
	a := &registry{}
	ca := &blockConfig{Fleet: fc}
	a.acquire(ca)
	defer a.release(ca)
	b := &registry{}
	cb := &blockConfig{Fleet: &fleet.Config{Name: "dns-b", Bind: netip.MustParseAddrPort(a.fleet().Addr()), Insecure: true}}
	b.acquire(cb)
	defer b.release(cb)
	if b.fleet() != nil || b.scheduler().Aggregator != nil {
		t.Error("a fleet on a taken address must not be used")
	}
}
