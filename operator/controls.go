package operator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/healthroute/healthroute/control"
)

// ControlSet is the replicated control state this process serves: its raft node,
// the rules, and which checks are controls.
type ControlSet struct {
	Node     *control.Node
	Rules    []control.Rule
	Controls []string // the checks of type control, by name
	Member   string   // this member's name, recorded with the changes made through it
}

// SetControls makes overrides and controls go through cs (nil: overrides are this
// process's own again), and applies its node's state.
func (o *Operator) SetControls(cs *ControlSet) {
	o.mu.Lock()
	o.ctl = cs
	o.mu.Unlock()
	if cs != nil {
		o.SetReplicated(cs.Node.State())
	} else {
		o.SetReplicated(nil)
	}
}

func (o *Operator) controls() *ControlSet {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.ctl
}

// SetReplicated applies a replicated state: each control that is off, and the
// replicated overrides, by check name, in every block that has the check (a
// control check reads its entry as its switch; see health.Snapshot.Judge). The raft node
// calls it after every change it applies.
func (o *Operator) SetReplicated(st *control.State) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.state = st
	var over map[string]bool
	if st != nil && o.ctl != nil {
		over = maps.Clone(st.Overrides) // never of a control: the state machine refuses those
		for _, c := range o.ctl.Controls {
			if !st.On(c) {
				over[c] = false
			}
		}
	}
	o.replicated = over
	for _, b := range o.blocks {
		b.SetOverrides(o.effectiveLocked(b))
	}
	o.version.Add(1)
}

// controlRow is one control as the API and status page show it.
type controlRow struct {
	Name       string     `json:"name"`
	On         bool       `json:"on"`
	LastChange *time.Time `json:"last_change,omitempty"`
}

// ruleRow is one rule with whether the state holds it.
type ruleRow struct {
	control.Rule
	Text  string `json:"description"`
	Holds bool   `json:"holds"`
}

// controlsView is GET /v1/controls.
type controlsView struct {
	Member    string          `json:"member"`
	Raft      control.Status  `json:"raft"`
	Controls  []controlRow    `json:"controls"`
	Rules     []ruleRow       `json:"rules"`
	Overrides map[string]bool `json:"overrides"`
	Audit     []control.Entry `json:"audit"`
}

// viewOf builds the controls view of st, with the last n audit entries.
func viewOf(cs *ControlSet, st *control.State, n int) controlsView {
	v := controlsView{Member: cs.Member, Raft: cs.Node.Status(), Overrides: st.Overrides, Controls: []controlRow{}, Rules: []ruleRow{}}
	for _, c := range cs.Controls {
		row := controlRow{Name: c, On: st.On(c)}
		if at, ok := st.Changed[c]; ok {
			row.LastChange = &at
		}
		v.Controls = append(v.Controls, row)
	}
	broken := control.Broken(cs.Rules, st.On)
	for _, r := range cs.Rules {
		v.Rules = append(v.Rules, ruleRow{Rule: r, Text: r.String(), Holds: !slices.ContainsFunc(broken, func(b control.Rule) bool { return b.Name == r.Name })})
	}
	v.Audit = st.Audit[max(0, len(st.Audit)-n):]
	slices.Reverse(v.Audit) // newest first
	return v
}

// getControls answers GET /v1/controls[?consistent=1][&audit=N]: local by default;
// consistent asks the leader to confirm its majority first (linearizable).
func (s *server) getControls(w http.ResponseWriter, r *http.Request) {
	cs := s.op.controls()
	if cs == nil {
		apiError(w, http.StatusNotFound, "no routing controls: no check of type control and no controls block")
		return
	}
	n := 100
	if a := r.URL.Query().Get("audit"); a != "" {
		v, err := strconv.Atoi(a)
		if err != nil || v < 0 || v > control.MaxAudit {
			apiError(w, http.StatusBadRequest, fmt.Sprintf("audit: expected a number of entries from 0 to %d", control.MaxAudit))
			return
		}
		n = v
	}
	st := cs.Node.State()
	if r.URL.Query().Get("consistent") != "" {
		ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
		defer cancel()
		var err error
		if st, err = cs.Node.ReadConsistent(ctx); err != nil {
			changeError(w, err)
			return
		}
	}
	writeJSON(w, http.StatusOK, viewOf(cs, st, n))
}

// changeBody is POST /v1/controls: controls to set ("on"/"off" or true/false),
// checks to override, a reason, and the rules to bypass.
type changeBody struct {
	Set        map[string]any    `json:"set"`
	Override   map[string]string `json:"override"`
	Reason     string            `json:"reason"`
	BreakGlass []string          `json:"break_glass"`
}

// postControls answers POST /v1/controls: one atomic change of several controls
// and overrides.
func (s *server) postControls(w http.ResponseWriter, r *http.Request) {
	token, ok := s.authorize(w, r, "a change of controls")
	if !ok {
		return
	}
	cs := s.op.controls()
	if cs == nil {
		apiError(w, http.StatusNotFound, "no routing controls: no check of type control and no controls block")
		return
	}
	var body changeBody
	dec := json.NewDecoder(io.LimitReader(r.Body, maxBodyBytes))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&body); err != nil {
		apiError(w, http.StatusBadRequest, "body: expected JSON {\"set\": {\"CONTROL\": \"on\"|\"off\"}, \"override\": {\"CHECK\": \"healthy\"|\"unhealthy\"|\"none\"}, \"reason\": \"...\", \"break_glass\": [\"RULE\"]}: "+err.Error())
		return
	}
	req := control.Request{Token: token, Member: cs.Member, Reason: body.Reason, BreakGlass: body.BreakGlass, Override: body.Override, Set: map[string]bool{}}
	for c, v := range body.Set {
		on, err := onOff(v)
		if err != nil {
			apiError(w, http.StatusBadRequest, fmt.Sprintf("set %s: %v", c, err))
			return
		}
		req.Set[c] = on
	}
	s.change(w, r, cs, req)
}

// postControl answers POST /v1/controls/NAME with the body on or off (curl --data
// off), and ?reason=TEXT.
func (s *server) postControl(w http.ResponseWriter, r *http.Request) {
	token, ok := s.authorize(w, r, "a change of control "+r.PathValue("name"))
	if !ok {
		return
	}
	cs := s.op.controls()
	if cs == nil {
		apiError(w, http.StatusNotFound, "no routing controls: no check of type control and no controls block")
		return
	}
	state, err := overrideState(w, r)
	if err != nil {
		apiError(w, http.StatusBadRequest, err.Error())
		return
	}
	on, err := onOff(state)
	if err != nil {
		apiError(w, http.StatusBadRequest, "state: "+err.Error())
		return
	}
	req := control.Request{Token: token, Member: cs.Member, Reason: r.URL.Query().Get("reason"), Set: map[string]bool{r.PathValue("name"): on}}
	if bg := r.URL.Query().Get("break_glass"); bg != "" {
		req.BreakGlass = strings.Split(bg, ",")
	}
	s.change(w, r, cs, req)
}

func onOff(v any) (bool, error) {
	switch v {
	case "on", true:
		return true, nil
	case "off", false:
		return false, nil
	}
	return false, fmt.Errorf("'%v', expected on or off", v)
}

// change checks req against this member's configuration, then applies it through
// the leader, answering 200, 404 (unknown control, check or rule: nothing sent),
// 409 (a rule refused it), 503 (no quorum) or 500 (outcome unknown).
func (s *server) change(w http.ResponseWriter, r *http.Request, cs *ControlSet, req control.Request) {
	for c := range req.Set {
		if !slices.Contains(cs.Controls, c) {
			s.refusedLocally(req, fmt.Sprintf("unknown control '%s'", c))
			apiError(w, http.StatusNotFound, fmt.Sprintf("unknown control '%s': expected one of %s; nothing was changed", c, strings.Join(cs.Controls, ", ")))
			return
		}
	}
	for _, b := range req.BreakGlass {
		if !slices.ContainsFunc(cs.Rules, func(x control.Rule) bool { return x.Name == b }) {
			s.refusedLocally(req, fmt.Sprintf("unknown rule '%s'", b))
			apiError(w, http.StatusNotFound, fmt.Sprintf("break_glass: unknown rule '%s'; nothing was changed", b))
			return
		}
	}
	for c := range req.Override {
		if slices.Contains(cs.Controls, c) {
			s.refusedLocally(req, fmt.Sprintf("override of control '%s'", c))
			apiError(w, http.StatusConflict, fmt.Sprintf("check %s is a routing control: set it with POST /v1/controls/%s (on or off, under the safety rules), not by an override; nothing was changed", c, c))
			return
		}
		if !s.op.hasCheck(s.scope, c) {
			s.refusedLocally(req, fmt.Sprintf("unknown check '%s'", c))
			apiError(w, http.StatusNotFound, fmt.Sprintf("no check named %q in the server blocks of this api; nothing was changed", c))
			return
		}
	}
	ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
	defer cancel()
	if err := cs.Node.Change(ctx, req); err != nil {
		log.Infof("control: change %s by token %s via %s refused: %v", describe(req), req.Token, req.Member, err)
		changeError(w, err)
		return
	}
	if len(req.BreakGlass) > 0 {
		log.Warningf("control: change %s by token %s via %s applied with break_glass %s", describe(req), req.Token, req.Member, strings.Join(req.BreakGlass, ", "))
	} else {
		log.Infof("control: change %s by token %s via %s applied", describe(req), req.Token, req.Member)
	}
	writeJSON(w, http.StatusOK, map[string]any{"applied": true, "set": req.Set, "override": req.Override})
}

// refusedLocally logs a change refused before it reached the leader (it is not
// in the replicated audit, which only the leader's order decides).
func (s *server) refusedLocally(req control.Request, why string) {
	control.CountInvalid()
	log.Infof("control: change %s by token %s via %s refused: %s", describe(req), req.Token, req.Member, why)
}

func describe(req control.Request) string {
	var parts []string
	for _, c := range slices.Sorted(maps.Keys(req.Set)) {
		parts = append(parts, c+"="+map[bool]string{true: "on", false: "off"}[req.Set[c]])
	}
	for _, c := range slices.Sorted(maps.Keys(req.Override)) {
		parts = append(parts, "override "+c+"="+req.Override[c])
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

func changeError(w http.ResponseWriter, err error) {
	var ref *control.Refusal
	switch {
	case errors.As(err, &ref):
		code := http.StatusConflict
		if ref.Rule == "" {
			code = http.StatusNotFound
		}
		writeJSON(w, code, map[string]string{"error": err.Error(), "rule": ref.Rule})
	case errors.Is(err, control.ErrNoQuorum):
		var qe *control.QuorumError
		outcome := "not applied"
		if errors.As(err, &qe) && qe.Unknown {
			outcome = "unknown"
		}
		w.Header().Set("Retry-After", "1")
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"error": err.Error(), "outcome": outcome})
	default:
		writeJSON(w, http.StatusInternalServerError, map[string]string{"error": err.Error(), "outcome": "unknown"})
	}
}
