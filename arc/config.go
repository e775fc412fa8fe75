package arc

import (
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/healthroute/healthroute/control"
)

// config serves ARC's configuration API (route53-recovery-control-config
// 2020-11-02, REST-JSON): control panels, routing controls and safety rules,
// described and listed beside the Corefile's, created, updated and deleted in
// the replicated state. The Corefile's are read-only through it.
type config struct{ be Backend }

// MaxConfigListResults is the most items one list page holds (ARC's maximum).
const MaxConfigListResults = 1000

// errConfig is an error of the configuration API, whose exceptions carry only
// a message.
func errConfig(status int, code, msg string) *apiError { return newErr(status, code, msg) }

func errConfigInput(msg string) *apiError {
	return errConfig(http.StatusBadRequest, "ValidationException", msg)
}

func errConfigNotFound(kind, arn string) *apiError {
	return errConfig(http.StatusNotFound, "ResourceNotFoundException", kind+" "+arn+" does not exist")
}

func (c *config) ServeAuthed(w http.ResponseWriter, r *http.Request, body []byte, key string) {
	segs := strings.Split(strings.TrimPrefix(r.URL.EscapedPath(), "/"), "/")
	for i, s := range segs {
		u, err := url.PathUnescape(s)
		if err != nil {
			errConfigInput("the path is not escaped as a URI path: " + err.Error()).write(w)
			return
		}
		segs[i] = u
	}
	route := r.Method + " " + segs[0]
	if len(segs) > 1 {
		route += " ARN"
	}
	if len(segs) > 2 {
		route += " " + segs[2]
	}
	var out any
	var e *apiError
	switch route {
	case "GET cluster":
		out = map[string]any{"Clusters": []any{c.cluster(r)}}
	case "GET cluster ARN":
		if segs[1] != ClusterARN {
			e = errConfigNotFound("Cluster", segs[1])
		} else {
			out = map[string]any{"Cluster": c.cluster(r)}
		}
	case "POST cluster", "DELETE cluster ARN":
		e = errConfigInput("the cluster is the fleet's voters, set in the Corefile's controls block: it is not created or deleted through the API")
	case "GET controlpanels":
		out, e = c.listPanels(r.URL.Query())
	case "GET controlpanel ARN":
		out, e = c.describePanel(segs[1])
	case "POST controlpanel":
		out, e = c.createPanel(r, key, body)
	case "PUT controlpanel":
		e = errConfigInput("a control panel is known by its name here: renaming it is not supported (create another)")
	case "DELETE controlpanel ARN":
		out, e = c.deletePanel(r, key, segs[1])
	case "GET controlpanel ARN routingcontrols":
		out, e = c.listControls(segs[1], r.URL.Query())
	case "GET routingcontrol ARN":
		out, e = c.describeControl(segs[1])
	case "POST routingcontrol":
		out, e = c.createControl(r, key, body)
	case "PUT routingcontrol":
		e = errConfigInput("a routing control is known by its name here (DNS records name it): renaming it is not supported")
	case "DELETE routingcontrol ARN":
		out, e = c.deleteControl(r, key, segs[1])
	case "GET controlpanel ARN safetyrules":
		out, e = c.listRules(segs[1], r.URL.Query())
	case "GET safetyrule ARN":
		out, e = c.describeRule(segs[1])
	case "POST safetyrule":
		out, e = c.createRule(r, key, body)
	case "PUT safetyrule":
		out, e = c.updateRule(r, key, body)
	case "DELETE safetyrule ARN":
		out, e = c.deleteRule(r, key, segs[1])
	default:
		e = errConfigInput(r.Method + " " + r.URL.Path + " is not an operation of route53-recovery-control-config 2020-11-02 that this endpoint serves")
		e.code = "UnknownOperationException"
	}
	if e != nil {
		e.write(w)
		return
	}
	writeJSON(w, http.StatusOK, out)
}

// cluster describes the one cluster; its endpoint is the member answering.
func (c *config) cluster(r *http.Request) map[string]any {
	return map[string]any{"ClusterArn": ClusterARN, "Name": PanelName, "Status": "DEPLOYED",
		"ClusterEndpoints": []map[string]string{{"Endpoint": "http://" + r.Host, "Region": "healthroute"}}}
}

func panelDoc(cat *catalog, p string) map[string]any {
	return map[string]any{"ClusterArn": ClusterARN, "ControlPanelArn": PanelARN(p), "DefaultControlPanel": p == PanelName,
		"Name": p, "RoutingControlCount": len(cat.controls(p)), "Status": "DEPLOYED"}
}

func controlDoc(ctl rc) map[string]any {
	return map[string]any{"ControlPanelArn": PanelARN(ctl.panel), "Name": ctl.name, "RoutingControlArn": ControlARNIn(ctl.panel, ctl.name), "Status": "DEPLOYED"}
}

// ruleDoc is a safety rule as ListSafetyRules states it: {"ASSERTION": {...}}
// or {"GATING": {...}}.
func ruleDoc(r rule) map[string]any { return ruleAs(r, "ASSERTION", "GATING") }

// ruleOut is a safety rule as the other calls answer it: {"AssertionRule": {...}}
// or {"GatingRule": {...}}.
func ruleOut(r rule) map[string]any { return ruleAs(r, "AssertionRule", "GatingRule") }

// ruleAs states r under the key of its kind.
func ruleAs(r rule, assertion, gating string) map[string]any {
	a := r.arc
	if a == nil { // a Corefile rule, stated as the ARC rule it is
		a = corefileARCRule(r.core[0])
	}
	arns := func(names []string) []string {
		out := []string{}
		for _, n := range names {
			out = append(out, ControlARNIn(r.panel, n))
		}
		return out
	}
	doc := map[string]any{"ControlPanelArn": PanelARN(r.panel), "Name": a.Name, "SafetyRuleArn": RuleARNIn(r.panel, a.Name), "Status": "DEPLOYED",
		"WaitPeriodMs": a.WaitMs, "RuleConfig": map[string]any{"Type": a.Type, "Threshold": a.Threshold, "Inverted": a.Inverted}}
	if a.Kind == control.RuleGating {
		doc["GatingControls"], doc["TargetControls"] = arns(a.Gating), arns(a.Targets)
		return map[string]any{gating: doc}
	}
	doc["AssertedControls"] = arns(a.Asserted)
	return map[string]any{assertion: doc}
}

// corefileARCRule states a Corefile rule as ARC's: an assertion of at least Min
// on is ATLEAST Min; at least Min off is NOT (at least n-Min+1 on); a gating rule
// has its one gate; a wait rule is an assertion that always holds (ATLEAST 0)
// with its wait period.
func corefileARCRule(r control.Rule) *control.ARCRule {
	a := &control.ARCRule{Name: r.Name, Panel: PanelName, Kind: control.RuleAssertion, Asserted: r.Controls, Type: control.RuleAtLeast}
	switch r.Kind {
	case control.Assertion:
		a.Threshold = r.Min
		if r.Inverted {
			a.Threshold, a.Inverted = len(r.Controls)-r.Min+1, true
		}
	case control.Gating:
		a.Kind, a.Asserted, a.Gating, a.Targets, a.Type = control.RuleGating, nil, []string{r.Gate}, r.Controls, control.RuleOr
		a.Threshold = 1
	case control.Wait:
		a.WaitMs = r.Wait.Milliseconds()
	}
	return a
}

// listOf answers a page of items, each as doc states it, under key.
func listOf[T any](key string, items []T, doc func(T) map[string]any, q url.Values) (any, *apiError) {
	limit, from, e := readPage(q, "MaxResults", "NextToken", MaxConfigListResults, func(_, msg string) *apiError { return errConfigInput(msg) })
	if e != nil {
		return nil, e
	}
	got, next := pageOf(items, limit, from)
	docs := []map[string]any{}
	for _, it := range got {
		docs = append(docs, doc(it))
	}
	out := map[string]any{key: docs}
	if next != "" {
		out["NextToken"] = next
	}
	return out, nil
}

func (c *config) listPanels(q url.Values) (any, *apiError) {
	if cl := q.Get("ClusterArn"); cl != "" && cl != ClusterARN {
		return nil, errConfigNotFound("Cluster", cl)
	}
	cat := load(c.be)
	return listOf("ControlPanels", cat.panels(), func(p string) map[string]any { return panelDoc(cat, p) }, q)
}

// panel returns the catalog and the panel arn names.
func (c *config) panel(arn string) (*catalog, string, *apiError) {
	cat := load(c.be)
	p, kind, _, ok := parseARN(arn)
	if !ok || kind != "" || !strings.HasPrefix(arn, "arn:") || !slices.Contains(cat.panels(), p) {
		return nil, "", errConfigNotFound("ControlPanel", arn)
	}
	return cat, p, nil
}

func (c *config) describePanel(arn string) (any, *apiError) {
	cat, p, e := c.panel(arn)
	if e != nil {
		return nil, e
	}
	return map[string]any{"ControlPanel": panelDoc(cat, p)}, nil
}

func (c *config) listControls(arn string, q url.Values) (any, *apiError) {
	cat, p, e := c.panel(arn)
	if e != nil {
		return nil, e
	}
	return listOf("RoutingControls", cat.controls(p), controlDoc, q)
}

func (c *config) describeControl(arn string) (any, *apiError) {
	ctl, ok := load(c.be).control(arn)
	if !ok {
		return nil, errConfigNotFound("RoutingControl", arn)
	}
	return map[string]any{"RoutingControl": controlDoc(ctl)}, nil
}

func (c *config) listRules(arn string, q url.Values) (any, *apiError) {
	cat, p, e := c.panel(arn)
	if e != nil {
		return nil, e
	}
	return listOf("SafetyRules", cat.rules(p), ruleDoc, q)
}

func (c *config) describeRule(arn string) (any, *apiError) {
	r, ok := load(c.be).rule(arn)
	if !ok {
		return nil, errConfigNotFound("SafetyRule", arn)
	}
	return ruleOut(r), nil
}

// validName checks a name as ARC's model states names: 1 to 64 characters, no
// space; here also no '/', which would break its ARN.
func validName(field, n string) *apiError {
	if n == "" || len(n) > 64 || strings.ContainsAny(n, " \t\n/") {
		return errConfigInput(field + " '" + n + "': expected 1 to 64 characters, without spaces or '/'")
	}
	return nil
}

func (c *config) createPanel(r *http.Request, key string, body []byte) (any, *apiError) {
	var in struct{ ClusterArn, ControlPanelName string }
	if e := decodeConfig(body, &in); e != nil {
		return nil, e
	}
	if in.ClusterArn != ClusterARN {
		return nil, errConfigNotFound("Cluster", in.ClusterArn)
	}
	if e := validName("ControlPanelName", in.ControlPanelName); e != nil {
		return nil, e
	}
	if in.ControlPanelName == PanelName {
		return nil, errConfig(http.StatusConflict, "ConflictException", "control panel "+PanelName+" is the Corefile's")
	}
	if e := c.propose(r, key, "CreateControlPanel", &control.ARCCommand{CreatePanel: in.ControlPanelName}); e != nil {
		return nil, e
	}
	return map[string]any{"ControlPanel": panelDoc(load(c.be), in.ControlPanelName)}, nil
}

// corefileRefusal is the answer to deleting what the Corefile declares.
func corefileRefusal(what string) *apiError {
	return errConfigInput(what + " is declared in the Corefile: change the Corefile to remove it")
}

func (c *config) deletePanel(r *http.Request, key, arn string) (any, *apiError) {
	_, p, e := c.panel(arn)
	if e != nil {
		return nil, e
	}
	if p == PanelName {
		return nil, corefileRefusal("control panel " + p)
	}
	return struct{}{}, c.propose(r, key, "DeleteControlPanel", &control.ARCCommand{DeletePanel: p})
}

func (c *config) createControl(r *http.Request, key string, body []byte) (any, *apiError) {
	var in struct{ ClusterArn, ControlPanelArn, RoutingControlName string }
	if e := decodeConfig(body, &in); e != nil {
		return nil, e
	}
	if in.ClusterArn != ClusterARN {
		return nil, errConfigNotFound("Cluster", in.ClusterArn)
	}
	if e := validName("RoutingControlName", in.RoutingControlName); e != nil {
		return nil, e
	}
	if in.ControlPanelArn == "" || in.ControlPanelArn == PanelARN(PanelName) {
		return nil, errConfigInput("ControlPanelArn: expected a control panel created through the API (the Corefile's routing controls are its checks of type control)")
	}
	_, p, e := c.panel(in.ControlPanelArn)
	if e != nil {
		return nil, e
	}
	if e := c.propose(r, key, "CreateRoutingControl", &control.ARCCommand{CreateControl: in.RoutingControlName, Panel: p}); e != nil {
		return nil, e
	}
	return map[string]any{"RoutingControl": controlDoc(rc{p, in.RoutingControlName})}, nil
}

func (c *config) deleteControl(r *http.Request, key, arn string) (any, *apiError) {
	ctl, ok := load(c.be).control(arn)
	if !ok {
		return nil, errConfigNotFound("RoutingControl", arn)
	}
	if ctl.panel == PanelName {
		return nil, corefileRefusal("routing control " + ctl.name)
	}
	return struct{}{}, c.propose(r, key, "DeleteRoutingControl", &control.ARCCommand{DeleteControl: ctl.name})
}

// newRule is ARC's NewAssertionRule and NewGatingRule in one.
type newRule struct {
	ControlPanelArn, Name                            string
	AssertedControls, GatingControls, TargetControls []string
	RuleConfig                                       *struct {
		Type      string
		Threshold int
		Inverted  bool
	}
	WaitPeriodMs *int64
}

func (c *config) createRule(r *http.Request, key string, body []byte) (any, *apiError) {
	var in struct{ AssertionRule, GatingRule *newRule }
	if e := decodeConfig(body, &in); e != nil {
		return nil, e
	}
	nr, kind := in.AssertionRule, control.RuleAssertion
	switch {
	case (in.AssertionRule == nil) == (in.GatingRule == nil):
		return nil, errConfigInput("expected exactly one of AssertionRule and GatingRule")
	case in.GatingRule != nil:
		nr, kind = in.GatingRule, control.RuleGating
	}
	if nr.RuleConfig == nil || nr.WaitPeriodMs == nil {
		return nil, errConfigInput("RuleConfig and WaitPeriodMs: required")
	}
	if e := validName("Name", nr.Name); e != nil {
		return nil, e
	}
	_, p, e := c.panel(nr.ControlPanelArn)
	if e != nil {
		return nil, e
	}
	if p == PanelName {
		return nil, errConfigInput("ControlPanelArn: the Corefile's panel takes its safety rules from the Corefile")
	}
	names := func(field string, arns []string) ([]string, *apiError) {
		var out []string
		for _, a := range arns {
			panel, n, ok := nameOf(a, "routingcontrol")
			if !ok || panel != p {
				return nil, errConfigInput(field + ": " + a + " is not a routing control of control panel " + p)
			}
			out = append(out, n)
		}
		return out, nil
	}
	ar := control.ARCRule{Name: nr.Name, Panel: p, Kind: kind, Type: nr.RuleConfig.Type, Threshold: nr.RuleConfig.Threshold,
		Inverted: nr.RuleConfig.Inverted, WaitMs: *nr.WaitPeriodMs}
	if ar.Asserted, e = names("AssertedControls", nr.AssertedControls); e == nil {
		if ar.Gating, e = names("GatingControls", nr.GatingControls); e == nil {
			ar.Targets, e = names("TargetControls", nr.TargetControls)
		}
	}
	if e != nil {
		return nil, e
	}
	if e := c.propose(r, key, "CreateSafetyRule", &control.ARCCommand{CreateRule: &ar}); e != nil {
		return nil, e
	}
	return ruleOut(rule{panel: p, arc: &ar}), nil
}

func (c *config) updateRule(r *http.Request, key string, body []byte) (any, *apiError) {
	var in struct {
		AssertionRuleUpdate, GatingRuleUpdate *struct {
			Name, SafetyRuleArn string
			WaitPeriodMs        int64
		}
	}
	if e := decodeConfig(body, &in); e != nil {
		return nil, e
	}
	up := in.AssertionRuleUpdate
	if up == nil {
		up = in.GatingRuleUpdate
	}
	if up == nil {
		return nil, errConfigInput("expected AssertionRuleUpdate or GatingRuleUpdate")
	}
	cat := load(c.be)
	have, ok := cat.rule(up.SafetyRuleArn)
	if !ok {
		return nil, errConfigNotFound("SafetyRule", up.SafetyRuleArn)
	}
	if have.arc == nil {
		return nil, errConfigInput("safety rule " + have.name() + " is declared in the Corefile: change the Corefile to change it")
	}
	if up.Name != have.name() {
		return nil, errConfigInput("a safety rule is known by its name here: renaming it is not supported")
	}
	if e := c.propose(r, key, "UpdateSafetyRule", &control.ARCCommand{UpdateRule: have.name(), WaitMs: up.WaitPeriodMs}); e != nil {
		return nil, e
	}
	now, _ := load(c.be).rule(up.SafetyRuleArn)
	return ruleOut(now), nil
}

func (c *config) deleteRule(r *http.Request, key, arn string) (any, *apiError) {
	have, ok := load(c.be).rule(arn)
	if !ok {
		return nil, errConfigNotFound("SafetyRule", arn)
	}
	if have.arc == nil {
		return nil, corefileRefusal("safety rule " + have.name())
	}
	return struct{}{}, c.propose(r, key, "DeleteSafetyRule", &control.ARCCommand{DeleteRule: have.name()})
}

// decodeConfig reads a REST-JSON body.
func decodeConfig(body []byte, v any) *apiError {
	if e := decode(body, v); e != nil {
		return errConfigInput(e.msg)
	}
	return nil
}

// propose applies cmd through the leader.
func (c *config) propose(r *http.Request, key, op string, cmd *control.ARCCommand) *apiError {
	n := c.be.Node()
	if n == nil {
		return errConfig(http.StatusServiceUnavailable, "InternalServerException", "no replicated state: ARC's configuration needs a controls block")
	}
	err := n.Change(r.Context(), control.Request{Token: key, Member: n.Name(), Reason: "route53-recovery-control-config " + op, ARC: cmd})
	var ref *control.Refusal
	switch {
	case err == nil:
		return nil
	case errors.As(err, &ref) && ref.Code == control.CodeARCNotFound:
		return errConfig(http.StatusNotFound, ref.Code, ref.Reason)
	case errors.As(err, &ref) && ref.Code == control.CodeARCConflict:
		return errConfig(http.StatusConflict, ref.Code, ref.Reason)
	case errors.As(err, &ref):
		return errConfigInput(ref.Reason)
	case errors.Is(err, control.ErrNoQuorum):
		return errConfig(http.StatusServiceUnavailable, "InternalServerException", err.Error())
	}
	return errConfig(http.StatusInternalServerError, "InternalServerException", err.Error())
}
