package arc

import (
	"net/http"
	"net/url"
	"testing"
)

// config calls an operation of the configuration API.
func (e *testEndpoint) config(method, path string, in, out any) (int, map[string]any) {
	e.t.Helper()
	return e.call("route53-recovery-control-config", method, path, "", in, out)
}

// TestConfigCreatedRulesAreEnforcedByTheCluster creates a panel, three routing
// controls and an assertion rule through the configuration API; the cluster API
// then refuses a change breaking it, as for a Corefile rule; the Corefile's panel,
// controls and rules are listed beside them and cannot be deleted.
func TestConfigCreatedRulesAreEnforcedByTheCluster(t *testing.T) {
	e := start(t, regions)
	var panel struct {
		ControlPanel struct{ ControlPanelArn, Name string }
	}
	if st, doc := e.config("POST", "/controlpanel", map[string]string{"ClusterArn": ClusterARN, "ControlPanelName": "web"}, &panel); st != 200 {
		t.Fatalf("CreateControlPanel: %d %v", st, doc)
	}
	pa := panel.ControlPanel.ControlPanelArn
	if pa != PanelARN("web") {
		t.Fatalf("the new panel's ARN %s", pa)
	}
	for _, n := range []string{"web-a", "web-b", "web-c"} {
		if st, doc := e.config("POST", "/routingcontrol", map[string]string{"ClusterArn": ClusterARN, "ControlPanelArn": pa, "RoutingControlName": n}, nil); st != 200 {
			t.Fatalf("CreateRoutingControl %s: %d %v", n, st, doc)
		}
	}
	rule := map[string]any{"AssertionRule": map[string]any{"ControlPanelArn": pa, "Name": "web-two", "WaitPeriodMs": 0,
		"AssertedControls": []string{ControlARNIn("web", "web-a"), ControlARNIn("web", "web-b"), ControlARNIn("web", "web-c")},
		"RuleConfig":       map[string]any{"Type": "ATLEAST", "Threshold": 2, "Inverted": false}}}
	if st, doc := e.config("POST", "/safetyrule", rule, nil); st != 200 {
		t.Fatalf("CreateSafetyRule: %d %v", st, doc)
	}
	st, doc := e.cluster("UpdateRoutingControlStates", map[string]any{"UpdateRoutingControlStateEntries": []entry{
		{ControlARNIn("web", "web-a"), "Off"}, {ControlARNIn("web", "web-b"), "Off"}}}, nil)
	if st != http.StatusConflict || doc["resourceId"] != RuleARNIn("web", "web-two") {
		t.Fatalf("two of three off under web-two: %d %v, want ConflictException of web-two", st, doc)
	}
	if st, doc := e.cluster("UpdateRoutingControlState", map[string]any{"RoutingControlArn": ControlARNIn("web", "web-a"), "RoutingControlState": "Off"}, nil); st != 200 {
		t.Fatalf("one of three off: %d %v", st, doc)
	}
	var panels struct{ ControlPanels []struct{ Name string } }
	e.config("GET", "/controlpanels", nil, &panels)
	if len(panels.ControlPanels) != 2 || panels.ControlPanels[0].Name != PanelName || panels.ControlPanels[1].Name != "web" {
		t.Errorf("ListControlPanels: %+v", panels)
	}
	var rules struct{ SafetyRules []map[string]map[string]any }
	e.config("GET", "/controlpanel/"+url.PathEscape(PanelARN(PanelName))+"/safetyrules", nil, &rules)
	if len(rules.SafetyRules) != 1 || rules.SafetyRules[0]["ASSERTION"]["Name"] != "one-up" || rules.SafetyRules[0]["ASSERTION"]["RuleConfig"].(map[string]any)["Threshold"] != 1.0 {
		t.Errorf("the Corefile's rules as ARC's: %+v", rules)
	}
	for _, c := range []struct{ path, typ string }{
		{"/controlpanel/" + url.PathEscape(PanelARN(PanelName)), "ValidationException"},
		{"/routingcontrol/" + url.PathEscape(ControlARN("east")), "ValidationException"},
		{"/safetyrule/" + url.PathEscape(RuleARN("one-up")), "ValidationException"},
		{"/controlpanel/" + url.PathEscape(pa), "ConflictException"},
		{"/routingcontrol/" + url.PathEscape(ControlARNIn("web", "web-a")), "ConflictException"},
	} {
		if st, doc := e.config("DELETE", c.path, nil, nil); doc["__type"] != c.typ {
			t.Errorf("DELETE %s: %d %v, want %s", c.path, st, doc, c.typ)
		}
	}
	for _, path := range []string{"/safetyrule/" + url.PathEscape(RuleARNIn("web", "web-two")), "/routingcontrol/" + url.PathEscape(ControlARNIn("web", "web-a")),
		"/routingcontrol/" + url.PathEscape(ControlARNIn("web", "web-b")), "/routingcontrol/" + url.PathEscape(ControlARNIn("web", "web-c")), "/controlpanel/" + url.PathEscape(pa)} {
		if st, doc := e.config("DELETE", path, nil, nil); st != 200 {
			t.Fatalf("DELETE %s: %d %v", path, st, doc)
		}
	}
	if st, _ := e.config("GET", "/controlpanel/"+url.PathEscape(pa), nil, nil); st != 404 {
		t.Errorf("the deleted panel is still described: %d", st)
	}
}

func TestConfigValidatesRulesAsARC(t *testing.T) {
	e := start(t, regions)
	pa := PanelARN("p")
	e.config("POST", "/controlpanel", map[string]string{"ClusterArn": ClusterARN, "ControlPanelName": "p"}, nil)
	for _, n := range []string{"a", "b"} {
		e.config("POST", "/routingcontrol", map[string]string{"ClusterArn": ClusterARN, "ControlPanelArn": pa, "RoutingControlName": n}, nil)
	}
	ab := []string{ControlARNIn("p", "a"), ControlARNIn("p", "b")}
	cfg := func(typ string, th int, inv bool) map[string]any {
		return map[string]any{"Type": typ, "Threshold": th, "Inverted": inv}
	}
	for _, c := range []struct {
		body   map[string]any
		status int
	}{
		{map[string]any{"AssertionRule": map[string]any{"ControlPanelArn": pa, "Name": "r", "WaitPeriodMs": 0, "AssertedControls": ab, "RuleConfig": cfg("ATLEAST", 3, false)}}, 400},
		{map[string]any{"AssertionRule": map[string]any{"ControlPanelArn": pa, "Name": "r", "WaitPeriodMs": 0, "AssertedControls": ab, "RuleConfig": cfg("SOME", 1, false)}}, 400},
		{map[string]any{"AssertionRule": map[string]any{"ControlPanelArn": pa, "Name": "r", "WaitPeriodMs": -5, "AssertedControls": ab, "RuleConfig": cfg("OR", 1, false)}}, 400},
		{map[string]any{"AssertionRule": map[string]any{"ControlPanelArn": pa, "Name": "r", "AssertedControls": ab, "RuleConfig": cfg("OR", 1, false)}}, 400},
		{map[string]any{"AssertionRule": map[string]any{"ControlPanelArn": pa, "Name": "r", "WaitPeriodMs": 0, "AssertedControls": []string{ControlARN("east")}, "RuleConfig": cfg("OR", 1, false)}}, 400},
		{map[string]any{"GatingRule": map[string]any{"ControlPanelArn": pa, "Name": "r", "WaitPeriodMs": 0, "GatingControls": ab, "TargetControls": ab[:1], "RuleConfig": cfg("OR", 1, false)}}, 400},
		{map[string]any{"GatingRule": map[string]any{"ControlPanelArn": pa, "Name": "r", "WaitPeriodMs": 0, "GatingControls": ab[:1], "TargetControls": ab[1:], "RuleConfig": cfg("OR", 1, true)}}, 400},
		{map[string]any{"AssertionRule": map[string]any{"ControlPanelArn": pa, "Name": "r", "WaitPeriodMs": 0, "AssertedControls": ab, "RuleConfig": cfg("AND", 0, true)}}, 400}, // not (a and b on): broken while both are on
		{map[string]any{"AssertionRule": map[string]any{"ControlPanelArn": pa, "Name": "r", "WaitPeriodMs": 0, "AssertedControls": ab, "RuleConfig": cfg("AND", 0, false)}}, 200},
		{map[string]any{"GatingRule": map[string]any{"ControlPanelArn": pa, "Name": "g", "WaitPeriodMs": 1000, "GatingControls": ab[:1], "TargetControls": ab[1:], "RuleConfig": cfg("OR", 1, false)}}, 200},
	} {
		if st, doc := e.config("POST", "/safetyrule", c.body, nil); st != c.status {
			t.Errorf("CreateSafetyRule %v: %d %v, want %d", c.body, st, doc, c.status)
		}
	}
	var up map[string]map[string]any
	if st, doc := e.config("PUT", "/safetyrule", map[string]any{"AssertionRuleUpdate": map[string]any{"Name": "r", "SafetyRuleArn": RuleARNIn("p", "r"), "WaitPeriodMs": 5000}}, &up); st != 200 || up["AssertionRule"]["WaitPeriodMs"] != 5000.0 {
		t.Errorf("UpdateSafetyRule WaitPeriodMs 5000: %d %v %v", st, doc, up)
	}
}
