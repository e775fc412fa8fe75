package healthroute

import (
	"strings"
	"testing"

	"github.com/coredns/caddy"

	"github.com/healthroute/healthroute/health/fleet"
)

func TestParseFleetPlacement(t *testing.T) {
	input := `healthroute example.org {
fleet {
  insecure
  join 127.0.0.2:7946
  region eu-west-1
  role probe
}
check web http http://192.0.2.1/ {
  checkers 3
  regions eu-west-1 us-east-1 a
}
check api http http://192.0.2.2/
}`
	cfg, err := parse(caddy.NewTestController("dns", input), nil)
	if err != nil {
		t.Fatal(err)
	}
	if f := cfg.Fleet; f.Region != "eu-west-1" || f.Role != fleet.RoleProbe {
		t.Errorf("fleet region %q role %s", f.Region, f.Role)
	}
	web, api := cfg.Checks["web"], cfg.Checks["api"]
	if web.Checkers != 3 || strings.Join(web.Regions, " ") != "eu-west-1 us-east-1 a" || web.Origin != "Testfile:8" {
		t.Errorf("web: checkers %d regions %v origin %q", web.Checkers, web.Regions, web.Origin)
	}
	if api.Checkers != 0 || api.Regions != nil {
		t.Errorf("api: checkers %d regions %v, want every member", api.Checkers, api.Regions)
	}
	plain, err := parse(caddy.NewTestController("dns", "healthroute {\ncheck web http http://192.0.2.1/\n}"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if plain.Checks["web"].Fingerprint() != web.Fingerprint() {
		t.Error("checkers and regions changed the fingerprint: a reload that places a check anew would lose its state")
	}
	if w := placementWarnings(cfg); len(w) != 0 {
		t.Errorf("warnings with a fleet: %q", w)
	}
	for _, role := range []string{"answer", "both"} {
		cfg, err := parse(caddy.NewTestController("dns", "healthroute {\nfleet {\ninsecure\nrole "+role+"\n}\n}"), nil)
		if err != nil || cfg.Fleet.Role.String() != role {
			t.Errorf("role %s: %v, %v", role, cfg, err)
		}
	}
}

func TestPlacementWarnings(t *testing.T) {
	cfg, err := parse(caddy.NewTestController("dns", "healthroute {\ncheck web http http://192.0.2.1/ {\ncheckers 2\n}\n}"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if w := placementWarnings(cfg); len(w) != 1 || !strings.HasPrefix(w[0], "Testfile:2: check web: checkers and regions place") {
		t.Errorf("checkers without a fleet: %q", w)
	}
	cfg, err = parse(caddy.NewTestController("dns", "healthroute {\nfleet {\ninsecure\nname dmz\nrole answer\n}\n}"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if w := placementWarnings(cfg); len(w) != 1 || !strings.Contains(w[0], "fleet dmz: role answer without join") {
		t.Errorf("answer alone: %q", w)
	}
}

func TestParseFleetPlacementErrors(t *testing.T) {
	checkParseErrors(t, []parseErrorCase{
		{"conflicting roles", "healthroute {\nfleet {\ninsecure\nrole answer probe\n}\n}", 4, "fleet: role: answer and probe conflict: answer means it never probes"},
		{"two roles", "healthroute {\nfleet {\ninsecure\nrole both answer\n}\n}", 4, "fleet: role: 2 values 'both answer', expected one of answer, probe or both"},
		{"role given twice", "healthroute {\nfleet {\ninsecure\nrole answer\nrole probe\n}\n}", 5, "fleet: role: given twice"},
		{"unknown role", "healthroute {\nfleet {\ninsecure\nrole dns\n}\n}", 4, "fleet: role: invalid value 'dns', expected answer"},
		{"bad region", "healthroute {\nfleet {\ninsecure\nregion EU_West\n}\n}", 4, "fleet: region: invalid value 'EU_West', expected a name of lower-case letters"},
		{"no checkers", "healthroute {\ncheck web http http://192.0.2.1/ {\ncheckers 0\n}\n}", 3, "check web: checkers: invalid value '0', expected a number of fleet members from 1 to 16"},
		{"too many checkers", "healthroute {\ncheck web http http://192.0.2.1/ {\ncheckers 17\n}\n}", 3, "check web: checkers: invalid value '17'"},
		{"checkers on a calculated check", "healthroute {\ncheck a http http://192.0.2.1/\ncheck web calculated a {\ncheckers 2\n}\n}", 4, "check web: checkers applies to"},
		{"bad check region", "healthroute {\ncheck web http http://192.0.2.1/ {\nregions a B\n}\n}", 3, "check web: regions: invalid region 'B'"},
	})
}
