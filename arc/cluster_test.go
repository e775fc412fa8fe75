package arc

import (
	"net/http"
	"slices"
	"testing"

	"github.com/healthroute/healthroute/control"
)

// regions is two routing controls under an assertion rule: at least one on.
var regions = control.Policy{Controls: []string{"east", "west", "north"},
	Rules: []control.Rule{{Name: "one-up", Kind: control.Assertion, Controls: []string{"east", "west"}, Min: 1}}}

func TestClusterGetListAndUpdate(t *testing.T) {
	e := start(t, regions)
	var got struct{ RoutingControlArn, RoutingControlName, RoutingControlState string }
	if st, err := e.cluster("GetRoutingControlState", map[string]string{"RoutingControlArn": ControlARN("east")}, &got); st != 200 {
		t.Fatalf("GetRoutingControlState: %d %v", st, err)
	}
	if got.RoutingControlState != "On" || got.RoutingControlName != "east" || got.RoutingControlArn != ControlARN("east") {
		t.Errorf("east before any change: %+v, want On", got)
	}
	if st, err := e.cluster("UpdateRoutingControlState", map[string]string{"RoutingControlArn": ControlARN("east"), "RoutingControlState": "Off"}, nil); st != 200 {
		t.Fatalf("UpdateRoutingControlState east Off: %d %v", st, err)
	}
	if e.node.State().On("east") {
		t.Error("east is still on in the replicated state after UpdateRoutingControlState Off")
	}
	var page struct {
		RoutingControls []routingControl
		NextToken       string
	}
	e.cluster("ListRoutingControls", map[string]any{"MaxResults": 2}, &page)
	if len(page.RoutingControls) != 2 || page.NextToken == "" || page.RoutingControls[0].RoutingControlName != "east" || page.RoutingControls[0].RoutingControlState != "Off" {
		t.Fatalf("first page of 2: %+v", page)
	}
	var rest struct{ RoutingControls []routingControl }
	e.cluster("ListRoutingControls", map[string]any{"ControlPanelArn": PanelARN(PanelName), "NextToken": page.NextToken}, &rest)
	var names []string
	for _, rc := range append(page.RoutingControls, rest.RoutingControls...) {
		names = append(names, rc.RoutingControlName)
	}
	if !slices.Equal(names, []string{"east", "north", "west"}) {
		t.Errorf("listed %v, want east north west", names)
	}
}

// TestClusterBatchUnderSafetyRules: a batch breaking an assertion rule is refused
// whole with ConflictException naming the rule; with the rule overridden it is
// applied, and the audit records the override and the access key.
func TestClusterBatchUnderSafetyRules(t *testing.T) {
	e := start(t, regions)
	batch := map[string]any{"UpdateRoutingControlStateEntries": []entry{
		{ControlARN("east"), "Off"}, {ControlARN("west"), "Off"}, {ControlARN("north"), "Off"}}}
	st, doc := e.cluster("UpdateRoutingControlStates", batch, nil)
	if st != http.StatusConflict || doc["__type"] != "ConflictException" || doc["resourceId"] != RuleARN("one-up") || doc["resourceType"] != "SafetyRule" {
		t.Fatalf("a batch turning both regions off answered %d %v, want 409 ConflictException of rule one-up", st, doc)
	}
	if s := e.node.State(); !s.On("east") || !s.On("west") || !s.On("north") {
		t.Fatal("a refused batch changed part of the state")
	}
	batch["SafetyRulesToOverride"] = []string{RuleARN("one-up")}
	if st, doc := e.cluster("UpdateRoutingControlStates", batch, nil); st != 200 {
		t.Fatalf("the batch with one-up overridden: %d %v", st, doc)
	}
	s := e.node.State()
	if s.On("east") || s.On("west") || s.On("north") {
		t.Fatal("the overridden batch was not applied whole")
	}
	last := s.Audit[len(s.Audit)-1]
	if !slices.Equal(last.BreakGlass, []string{"one-up"}) || last.Token != testKeyID || last.Refused != "" {
		t.Errorf("audit entry %+v, want the override of one-up by %s", last, testKeyID)
	}
}

func TestClusterBadRequestsAnswerARCErrors(t *testing.T) {
	e := start(t, regions)
	for _, c := range []struct {
		op     string
		in     any
		status int
		typ    string
	}{
		{"GetRoutingControlState", map[string]string{"RoutingControlArn": ControlARN("south")}, 404, "ResourceNotFoundException"},
		{"GetRoutingControlState", map[string]string{}, 400, "ValidationException"},
		{"GetRoutingControlState", "not an object", 400, "ValidationException"},
		{"UpdateRoutingControlState", map[string]string{"RoutingControlArn": ControlARN("east"), "RoutingControlState": "Maybe"}, 400, "ValidationException"},
		{"UpdateRoutingControlState", map[string]any{"RoutingControlArn": ControlARN("east"), "RoutingControlState": "Off",
			"SafetyRulesToOverride": []string{RuleARN("nope")}}, 404, "ResourceNotFoundException"},
		{"UpdateRoutingControlStates", map[string]any{"UpdateRoutingControlStateEntries": []entry{}}, 400, "ValidationException"},
		{"UpdateRoutingControlStates", map[string]any{"UpdateRoutingControlStateEntries": []entry{{ControlARN("east"), "Off"}, {ControlARN("east"), "On"}}}, 400, "ValidationException"},
		{"ListRoutingControls", map[string]any{"ControlPanelArn": PanelARN("other")}, 404, "ResourceNotFoundException"},
		{"ListRoutingControls", map[string]any{"MaxResults": 0}, 400, "ValidationException"},
		{"DeleteEverything", map[string]any{}, 400, "ValidationException"},
	} {
		st, doc := e.cluster(c.op, c.in, nil)
		if st != c.status || doc["__type"] != c.typ {
			t.Errorf("%s %v answered %d %v, want %d %s", c.op, c.in, st, doc, c.status, c.typ)
		}
	}
	if !e.node.State().On("east") {
		t.Error("a refused request changed east")
	}
}
