package arc

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
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

// control returns the catalog and the routing control arn names.
func (c *cluster) control(arn string) (*catalog, rc, *apiError) {
	if arn == "" {
		return nil, rc{}, errValidation("fieldValidationFailed", "RoutingControlArn: expected a routing control's ARN")
	}
	cat := load(c.be)
	ctl, ok := cat.control(arn)
	if !ok {
		return nil, rc{}, errNotFound("RoutingControl", arn)
	}
	return cat, ctl, nil
}

func (c *cluster) get(arn string) (any, *apiError) {
	cat, ctl, e := c.control(arn)
	if e != nil {
		return nil, e
	}
	return struct{ RoutingControlArn, RoutingControlName, RoutingControlState string }{
		ControlARNIn(ctl.panel, ctl.name), ctl.name, stateName(cat.st.On(ctl.name))}, nil
}

func (c *cluster) list(panelARN, next string, max *int) (any, *apiError) {
	cat := load(c.be)
	panel := ""
	if panelARN != "" {
		p, kind, _, ok := parseARN(panelARN)
		if !ok || kind != "" || !slices.Contains(cat.panels(), p) {
			return nil, errNotFound("ControlPanel", panelARN)
		}
		panel = p
	}
	limit := MaxListResults
	if max != nil {
		if *max < 1 {
			return nil, errValidation("fieldValidationFailed", fmt.Sprintf("MaxResults: %d, expected at least 1", *max))
		}
		limit = min(*max, MaxListResults)
	}
	out := struct {
		RoutingControls []routingControl
		NextToken       string `json:",omitempty"`
	}{RoutingControls: []routingControl{}}
	from := 0
	if next != "" {
		v, err := strconv.Atoi(next)
		if err != nil || v < 0 {
			return nil, errValidation("fieldValidationFailed", "NextToken: not a token this endpoint gave")
		}
		from = v
	}
	ctls := cat.controls(panel)
	for i := from; i < len(ctls); i++ {
		if len(out.RoutingControls) == limit {
			out.NextToken = strconv.Itoa(i)
			break
		}
		ctl := ctls[i]
		out.RoutingControls = append(out.RoutingControls, routingControl{ControlPanelArn: PanelARN(ctl.panel), ControlPanelName: ctl.panel,
			RoutingControlArn: ControlARNIn(ctl.panel, ctl.name), RoutingControlName: ctl.name, RoutingControlState: stateName(cat.st.On(ctl.name))})
	}
	return out, nil
}

// entry is one routing control's new state.
type entry struct{ RoutingControlArn, RoutingControlState string }

// update sets the entries' controls in one change, applied whole or refused
// whole, with the named safety rules overridden (break-glass, audited).
func (c *cluster) update(r *http.Request, key, op string, entries []entry, override []string) *apiError {
	set := map[string]bool{}
	var cat *catalog
	for _, en := range entries {
		c2, ctl, e := c.control(en.RoutingControlArn)
		if e != nil {
			return e
		}
		cat = c2
		if en.RoutingControlState != "On" && en.RoutingControlState != "Off" {
			return errValidation("fieldValidationFailed", fmt.Sprintf("RoutingControlState: '%s', expected On or Off", en.RoutingControlState))
		}
		if _, dup := set[ctl.name]; dup {
			return errValidation("fieldValidationFailed", "UpdateRoutingControlStateEntries: routing control "+en.RoutingControlArn+" is given twice")
		}
		set[ctl.name] = en.RoutingControlState == "On"
	}
	var glass []string
	for _, arn := range override {
		r, ok := cat.rule(arn)
		if !ok {
			return errNotFound("SafetyRule", arn)
		}
		glass = append(glass, r.name())
	}
	n := cat.node
	err := n.Change(r.Context(), control.Request{Token: key, Member: n.Name(), Reason: "route53-recovery-cluster " + op,
		Set: set, BreakGlass: glass})
	var ref *control.Refusal
	switch {
	case err == nil:
		return nil
	case errors.As(err, &ref) && ref.Rule != "":
		return &apiError{status: http.StatusConflict, code: "ConflictException", msg: ref.Reason,
			fields: map[string]any{"resourceId": cat.ruleARN(ref.Rule), "resourceType": "SafetyRule"}}
	case errors.As(err, &ref):
		return errValidation("other", ref.Reason)
	case errors.Is(err, control.ErrNoQuorum):
		return newErr(http.StatusServiceUnavailable, "EndpointTemporarilyUnavailableException", err.Error()+"; try another cluster endpoint")
	}
	return newErr(http.StatusInternalServerError, "InternalServerException", err.Error())
}
