package control

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// ARCConfig is what ARC's configuration API created beside the Corefile: control
// panels, routing controls (each in a panel) and safety rules. Names are the
// identities: a routing control's name is unique fleet-wide, as a check's is.
type ARCConfig struct {
	Panels   []string          `json:"panels,omitempty"`   // sorted
	Controls map[string]string `json:"controls,omitempty"` // routing control -> its panel
	Rules    []ARCRule         `json:"rules,omitempty"`    // in creation order
}

// ARC rule types (RuleConfig.Type) and kinds.
const (
	RuleAtLeast   = "ATLEAST"
	RuleAnd       = "AND"
	RuleOr        = "OR"
	RuleAssertion = "ASSERTION"
	RuleGating    = "GATING"
)

// ARCRule is a safety rule as ARC's configuration API states it.
type ARCRule struct {
	Name      string   `json:"name"`
	Panel     string   `json:"panel"`
	Kind      string   `json:"kind"`               // RuleAssertion or RuleGating
	Asserted  []string `json:"asserted,omitempty"` // assertion: the controls it asserts
	Gating    []string `json:"gating,omitempty"`   // gating: the gating controls (one)
	Targets   []string `json:"targets,omitempty"`  // gating: the controls it gates
	Type      string   `json:"type"`               // RuleAtLeast, RuleAnd or RuleOr
	Threshold int      `json:"threshold"`
	Inverted  bool     `json:"inverted,omitempty"`
	WaitMs    int64    `json:"wait_ms"` // WaitPeriodMs: after a change, none again for this long
}

// MaxWaitPeriod is the longest WaitPeriodMs, as the Corefile's wait rules.
const MaxWaitPeriod = 24 * time.Hour

// Rules returns the rules r is enforced as: an assertion or gating rule and,
// with a wait period, a wait rule of the same name over the same controls.
func (r ARCRule) Rules() []Rule {
	var out []Rule
	set := r.Asserted
	switch r.Kind {
	case RuleAssertion:
		n := len(r.Asserted)
		min := map[string]int{RuleAtLeast: r.Threshold, RuleAnd: n, RuleOr: 1}[r.Type]
		if r.Inverted { // not (at least min on) = at least n-min+1 off
			min = n - min + 1
		}
		out = append(out, Rule{Name: r.Name, Kind: Assertion, Controls: slices.Clone(r.Asserted), Min: min, Inverted: r.Inverted})
	case RuleGating:
		set = r.Targets
		out = append(out, Rule{Name: r.Name, Kind: Gating, Controls: slices.Clone(r.Targets), Gate: r.Gating[0]})
	}
	if r.WaitMs > 0 {
		out = append(out, Rule{Name: r.Name, Kind: Wait, Controls: slices.Clone(set), Wait: time.Duration(r.WaitMs) * time.Millisecond})
	}
	return out
}

// ARCCommand changes the ARC configuration. Exactly one part is set.
type ARCCommand struct {
	CreatePanel   string   `json:"create_panel,omitempty"`
	DeletePanel   string   `json:"delete_panel,omitempty"`
	CreateControl string   `json:"create_control,omitempty"` // in Panel
	Panel         string   `json:"panel,omitempty"`
	DeleteControl string   `json:"delete_control,omitempty"`
	CreateRule    *ARCRule `json:"create_rule,omitempty"`
	UpdateRule    string   `json:"update_rule,omitempty"` // its WaitMs becomes WaitMs
	WaitMs        int64    `json:"wait_ms,omitempty"`
	DeleteRule    string   `json:"delete_rule,omitempty"`
}

// Codes of refused ARC configuration commands (Refusal.Code), ARC's exceptions.
const (
	CodeARCValidation = "ValidationException"
	CodeARCNotFound   = "ResourceNotFoundException"
	CodeARCConflict   = "ConflictException"
)

func arcRefusal(code, format string, args ...any) *Refusal {
	return &Refusal{Code: code, Reason: fmt.Sprintf(format, args...)}
}

// arcRules returns every rule the state's ARC configuration enforces.
func (s *State) arcRules() []Rule {
	if s.ARC == nil {
		return nil
	}
	var out []Rule
	for _, r := range s.ARC.Rules {
		out = append(out, r.Rules()...)
	}
	return out
}

// ARCControls returns the routing controls the ARC configuration created, sorted.
func (s *State) ARCControls() []string {
	if s.ARC == nil {
		return nil
	}
	return slices.Sorted(maps.Keys(s.ARC.Controls))
}

// applyARC decides an ARC configuration command; corefile are the controls the
// leader's configuration defines, rules its rules: names they hold are taken.
func (s *State) applyARC(cmd *Command) error {
	c := cmd.ARC
	cfg := &ARCConfig{}
	if s.ARC != nil {
		cfg = &ARCConfig{Panels: slices.Clone(s.ARC.Panels), Controls: maps.Clone(s.ARC.Controls), Rules: slices.Clone(s.ARC.Rules)}
	}
	if cfg.Controls == nil {
		cfg.Controls = map[string]string{}
	}
	ruleAt := func(name string) int {
		return slices.IndexFunc(cfg.Rules, func(r ARCRule) bool { return r.Name == name })
	}
	corefileRule := func(name string) bool {
		return slices.ContainsFunc(cmd.Rules, func(r Rule) bool { return r.Name == name })
	}
	switch {
	case c.CreatePanel != "":
		if slices.Contains(cfg.Panels, c.CreatePanel) {
			return arcRefusal(CodeARCConflict, "control panel %s exists already", c.CreatePanel)
		}
		cfg.Panels = append(cfg.Panels, c.CreatePanel)
		slices.Sort(cfg.Panels)
	case c.DeletePanel != "":
		i := slices.Index(cfg.Panels, c.DeletePanel)
		if i < 0 {
			return arcRefusal(CodeARCNotFound, "no control panel %s created through the API", c.DeletePanel)
		}
		for rc, p := range cfg.Controls {
			if p == c.DeletePanel {
				return arcRefusal(CodeARCConflict, "control panel %s still holds routing control %s: delete its routing controls and safety rules first", c.DeletePanel, rc)
			}
		}
		cfg.Panels = slices.Delete(cfg.Panels, i, i+1)
	case c.CreateControl != "":
		if !slices.Contains(cfg.Panels, c.Panel) {
			return arcRefusal(CodeARCNotFound, "no control panel %s created through the API", c.Panel)
		}
		if _, dup := cfg.Controls[c.CreateControl]; dup || slices.Contains(cmd.Controls, c.CreateControl) || slices.Contains(cmd.Checks, c.CreateControl) {
			return arcRefusal(CodeARCConflict, "a routing control or check named %s exists already", c.CreateControl)
		}
		cfg.Controls[c.CreateControl] = c.Panel
	case c.DeleteControl != "":
		if _, ok := cfg.Controls[c.DeleteControl]; !ok {
			return arcRefusal(CodeARCNotFound, "no routing control %s created through the API", c.DeleteControl)
		}
		for _, r := range cfg.Rules {
			if slices.Contains(r.Asserted, c.DeleteControl) || slices.Contains(r.Gating, c.DeleteControl) || slices.Contains(r.Targets, c.DeleteControl) {
				return arcRefusal(CodeARCConflict, "routing control %s is in safety rule %s: delete the rule first", c.DeleteControl, r.Name)
			}
		}
		delete(cfg.Controls, c.DeleteControl)
	case c.CreateRule != nil:
		r := *c.CreateRule
		if ruleAt(r.Name) >= 0 || corefileRule(r.Name) {
			return arcRefusal(CodeARCConflict, "a safety rule named %s exists already", r.Name)
		}
		if err := checkARCRule(r, cfg); err != nil {
			return err
		}
		if broken := Broken(r.Rules(), s.On); len(broken) > 0 {
			return arcRefusal(CodeARCValidation, "safety rule %s (%s) is broken by the routing controls' states now: change them first", r.Name, broken[0])
		}
		cfg.Rules = append(cfg.Rules, r)
	case c.UpdateRule != "":
		i := ruleAt(c.UpdateRule)
		if i < 0 {
			return arcRefusal(CodeARCNotFound, "no safety rule %s created through the API", c.UpdateRule)
		}
		if c.WaitMs < 0 || time.Duration(c.WaitMs)*time.Millisecond > MaxWaitPeriod {
			return arcRefusal(CodeARCValidation, "WaitPeriodMs %d: expected 0 to %d", c.WaitMs, MaxWaitPeriod.Milliseconds())
		}
		cfg.Rules[i].WaitMs = c.WaitMs
	case c.DeleteRule != "":
		i := ruleAt(c.DeleteRule)
		if i < 0 {
			return arcRefusal(CodeARCNotFound, "no safety rule %s created through the API", c.DeleteRule)
		}
		cfg.Rules = slices.Delete(cfg.Rules, i, i+1)
	default:
		return arcRefusal(CodeARCValidation, "an ARC configuration command that changes nothing")
	}
	s.ARC = cfg
	return nil
}

// checkARCRule validates a new rule as ARC does: its controls exist in its
// panel, its type and threshold hold together, its wait period is in range.
func checkARCRule(r ARCRule, cfg *ARCConfig) error {
	bad := func(format string, args ...any) error {
		return arcRefusal(CodeARCValidation, "safety rule %s: %s", r.Name, fmt.Sprintf(format, args...))
	}
	if !slices.Contains(cfg.Panels, r.Panel) {
		return arcRefusal(CodeARCNotFound, "no control panel %s created through the API", r.Panel)
	}
	var sets [][]string
	switch r.Kind {
	case RuleAssertion:
		if len(r.Asserted) == 0 {
			return bad("AssertedControls: expected at least one routing control")
		}
		sets = [][]string{r.Asserted}
	case RuleGating:
		if len(r.Gating) != 1 {
			return bad("GatingControls: %d given, expected exactly one (a gate of several controls is not supported)", len(r.Gating))
		}
		if len(r.Targets) == 0 {
			return bad("TargetControls: expected at least one routing control")
		}
		if slices.Contains(r.Targets, r.Gating[0]) {
			return bad("the gating control %s is among its own targets", r.Gating[0])
		}
		sets = [][]string{r.Gating, r.Targets}
	default:
		return bad("expected an AssertionRule or a GatingRule")
	}
	for _, set := range sets {
		for i, c := range set {
			if p, ok := cfg.Controls[c]; !ok || p != r.Panel {
				return bad("routing control %s is not one of control panel %s", c, r.Panel)
			}
			if slices.Contains(set[:i], c) {
				return bad("routing control %s is given twice", c)
			}
		}
	}
	n := len(sets[0])
	switch r.Type {
	case RuleAtLeast:
		if r.Threshold < 1 || r.Threshold > n {
			return bad("Threshold %d: expected 1 to %d (the number of controls) for ATLEAST", r.Threshold, n)
		}
	case RuleAnd, RuleOr:
	default:
		return bad("RuleConfig.Type '%s': expected ATLEAST, AND or OR", r.Type)
	}
	if r.Kind == RuleGating && (r.Inverted || r.Type == RuleAtLeast && r.Threshold != 1) {
		return bad("a gating rule's RuleConfig: expected the gate on (not inverted, ATLEAST 1, AND or OR)")
	}
	if r.WaitMs < 0 || time.Duration(r.WaitMs)*time.Millisecond > MaxWaitPeriod {
		return bad("WaitPeriodMs %d: expected 0 to %d", r.WaitMs, MaxWaitPeriod.Milliseconds())
	}
	if strings.TrimSpace(r.Name) != r.Name || r.Name == "" || len(r.Name) > 64 {
		return bad("Name: expected 1 to 64 characters without spaces")
	}
	return nil
}
