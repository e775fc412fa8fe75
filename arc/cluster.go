package arc

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/healthroute/healthroute/control"
)

// cluster serves the cluster API (route53-recovery-cluster, AWS JSON 1.0): every
// member is a cluster endpoint, and a change through any of them is applied once,
// through the leader, fleet-wide.
type cluster struct{ be Backend }

// targetPrefix begins the X-Amz-Target of every cluster API call.
const targetPrefix = "ToggleCustomerAPI."

// MaxListResults is the most routing controls one ListRoutingControls page holds.
const MaxListResults = 500

func (c *cluster) ServeAuthed(w http.ResponseWriter, r *http.Request, body []byte, key string) {
	op, ok := strings.CutPrefix(r.Header.Get("X-Amz-Target"), targetPrefix)
	if r.Method != http.MethodPost || !ok {
		errValidation("unknownOperation", "expected a POST with X-Amz-Target "+targetPrefix+"OPERATION").write(w)
		return
	}
	var out any
	var e *apiError
	switch op {
	case "GetRoutingControlState":
		var in struct{ RoutingControlArn string }
		if e = decode(body, &in); e == nil {
			out, e = c.get(in.RoutingControlArn)
		}
	case "ListRoutingControls":
		var in struct {
			ControlPanelArn, NextToken string
			MaxResults                 *int
		}
		if e = decode(body, &in); e == nil {
			out, e = c.list(in.ControlPanelArn, in.NextToken, in.MaxResults)
		}
	case "UpdateRoutingControlState":
		var in struct {
			RoutingControlArn, RoutingControlState string
			SafetyRulesToOverride                  []string
		}
		if e = decode(body, &in); e == nil {
			e = c.update(r, key, op, []entry{{in.RoutingControlArn, in.RoutingControlState}}, in.SafetyRulesToOverride)
			out = struct{}{}
		}
	case "UpdateRoutingControlStates":
		var in struct {
			UpdateRoutingControlStateEntries []entry
			SafetyRulesToOverride            []string
		}
		if e = decode(body, &in); e == nil {
			if len(in.UpdateRoutingControlStateEntries) == 0 {
				e = errValidation("fieldValidationFailed", "UpdateRoutingControlStateEntries: expected at least one entry")
			} else {
				e = c.update(r, key, op, in.UpdateRoutingControlStateEntries, in.SafetyRulesToOverride)
				out = struct{}{}
			}
		}
	default:
		e = errValidation("unknownOperation", "unknown operation "+op+" of route53-recovery-cluster 2019-12-02")
	}
	if e != nil {
		e.write(w)
		return
	}
	writeJSON(w, http.StatusOK, out)
}

// decode reads a request body (an empty one is {}).
func decode(body []byte, v any) *apiError {
	if len(body) == 0 {
		return nil
	}
	if err := json.Unmarshal(body, v); err != nil {
		return errValidation("cannotParse", "the request body is not the operation's JSON: "+err.Error())
	}
	return nil
}

// routingControl is a routing control as the cluster API lists it.
type routingControl struct {
	ControlPanelArn, ControlPanelName     string
	RoutingControlArn, RoutingControlName string
	RoutingControlState                   string
	Owner                                 string `json:",omitempty"`
}

func stateName(on bool) string {
	if on {
		return "On"
	}
	return "Off"
}

// controls returns the node and the routing controls of its policy, sorted.
func (c *cluster) controls() (*control.Node, []string) {
	n := c.be.Node()
	if n == nil {
		return nil, nil
	}
	names := slices.Clone(n.Policy().Controls)
	slices.Sort(names)
	return n, names
}

// control returns the node and the name of the routing control arn names.
func (c *cluster) control(arn string) (*control.Node, string, *apiError) {
	if arn == "" {
		return nil, "", errValidation("fieldValidationFailed", "RoutingControlArn: expected a routing control's ARN")
	}
	n, names := c.controls()
	name, ok := nameOf(arn, "routingcontrol")
	if !ok || !slices.Contains(names, name) {
		return nil, "", errNotFound("RoutingControl", arn)
	}
	return n, name, nil
}

func (c *cluster) get(arn string) (any, *apiError) {
	n, name, e := c.control(arn)
	if e != nil {
		return nil, e
	}
	return struct{ RoutingControlArn, RoutingControlName, RoutingControlState string }{
		ControlARN(name), name, stateName(n.State().On(name))}, nil
}

func (c *cluster) list(panel, next string, max *int) (any, *apiError) {
	if panel != "" && panel != PanelARN(PanelName) {
		return nil, errNotFound("ControlPanel", panel)
	}
	limit := MaxListResults
	if max != nil {
		if *max < 1 {
			return nil, errValidation("fieldValidationFailed", fmt.Sprintf("MaxResults: %d, expected at least 1", *max))
		}
		limit = min(*max, MaxListResults)
	}
	n, names := c.controls()
	out := struct {
		RoutingControls []routingControl
		NextToken       string `json:",omitempty"`
	}{RoutingControls: []routingControl{}}
	if n == nil {
		return out, nil
	}
	st := n.State()
	for _, name := range names {
		if next != "" && name <= next {
			continue
		}
		if len(out.RoutingControls) == limit {
			out.NextToken = out.RoutingControls[limit-1].RoutingControlName
			break
		}
		out.RoutingControls = append(out.RoutingControls, routingControl{ControlPanelArn: PanelARN(PanelName), ControlPanelName: PanelName,
			RoutingControlArn: ControlARN(name), RoutingControlName: name, RoutingControlState: stateName(st.On(name))})
	}
	return out, nil
}

// entry is one routing control's new state.
type entry struct{ RoutingControlArn, RoutingControlState string }

// update sets the entries' controls in one change, applied whole or refused
// whole, with the named safety rules overridden (break-glass, audited).
func (c *cluster) update(r *http.Request, key, op string, entries []entry, override []string) *apiError {
	set := map[string]bool{}
	var n *control.Node
	for _, en := range entries {
		node, name, e := c.control(en.RoutingControlArn)
		if e != nil {
			return e
		}
		n = node
		if en.RoutingControlState != "On" && en.RoutingControlState != "Off" {
			return errValidation("fieldValidationFailed", fmt.Sprintf("RoutingControlState: '%s', expected On or Off", en.RoutingControlState))
		}
		if _, dup := set[name]; dup {
			return errValidation("fieldValidationFailed", "UpdateRoutingControlStateEntries: routing control "+en.RoutingControlArn+" is given twice")
		}
		set[name] = en.RoutingControlState == "On"
	}
	var glass []string
	rules := n.Policy().Rules
	for _, arn := range override {
		name, ok := nameOf(arn, "safetyrule")
		if !ok || !slices.ContainsFunc(rules, func(r control.Rule) bool { return r.Name == name }) {
			return errNotFound("SafetyRule", arn)
		}
		glass = append(glass, name)
	}
	err := n.Change(r.Context(), control.Request{Token: key, Member: n.Name(), Reason: "route53-recovery-cluster " + op,
		Set: set, BreakGlass: glass})
	var ref *control.Refusal
	switch {
	case err == nil:
		return nil
	case errors.As(err, &ref) && ref.Rule != "":
		return &apiError{status: http.StatusConflict, code: "ConflictException", msg: ref.Reason,
			fields: map[string]any{"resourceId": RuleARN(ref.Rule), "resourceType": "SafetyRule"}}
	case errors.As(err, &ref):
		return errValidation("other", ref.Reason)
	case errors.Is(err, control.ErrNoQuorum):
		return newErr(http.StatusServiceUnavailable, "EndpointTemporarilyUnavailableException", err.Error()+"; try another cluster endpoint")
	}
	return newErr(http.StatusInternalServerError, "InternalServerException", err.Error())
}
