package arc

import "testing"

// TestMalformedRequestsGetARCErrors sends bodies of the wrong shape to every
// operation of the three APIs: each is answered with a 4xx JSON error, nothing
// changes, and the listener keeps serving.
func TestMalformedRequestsGetARCErrors(t *testing.T) {
	e := startWith(t, regions, Backend{Resources: func() []Resource { return svc }})
	bodies := []any{nil, "null", []int{1}, map[string]any{"RoutingControlArn": 5}, map[string]any{"AssertionRule": map[string]any{}},
		map[string]any{"GatingRule": map[string]any{"RuleConfig": map[string]any{}, "WaitPeriodMs": 1}}, map[string]any{"UpdateRoutingControlStateEntries": "x"},
		map[string]any{"awayFrom": 1, "expiresIn": []string{}}}
	for _, op := range []string{"GetRoutingControlState", "ListRoutingControls", "UpdateRoutingControlState", "UpdateRoutingControlStates"} {
		for _, b := range bodies {
			if st, doc := e.cluster(op, b, nil); st != 200 && (st < 400 || st >= 500 || doc["__type"] == nil) {
				t.Errorf("%s %v: %d %v", op, b, st, doc)
			}
		}
	}
	for _, svc := range []struct{ service, method, path string }{
		{"arc-zonal-shift", "POST", "/zonalshifts"}, {"arc-zonal-shift", "PATCH", "/zonalshifts/x"}, {"arc-zonal-shift", "GET", "/managedresources/a%2Fb%3A"},
		{"route53-recovery-control-config", "POST", "/controlpanel"}, {"route53-recovery-control-config", "POST", "/routingcontrol"},
		{"route53-recovery-control-config", "POST", "/safetyrule"}, {"route53-recovery-control-config", "PUT", "/safetyrule"},
		{"route53-recovery-control-config", "GET", "/"}, {"route53-recovery-control-config", "DELETE", "/safetyrule/arn:aws:x"},
	} {
		for _, b := range bodies {
			if st, doc := e.call(svc.service, svc.method, svc.path, "", b, nil); st != 200 && (st < 400 || st >= 500 || doc["__type"] == nil) {
				t.Errorf("%s %s %v: %d %v", svc.method, svc.path, b, st, doc)
			}
		}
	}
	if s := e.node.State(); len(s.Shifts) != 0 || s.ARC != nil || !s.On("east") {
		t.Errorf("a malformed request changed the state: %+v", s)
	}
}
