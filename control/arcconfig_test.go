package control

import (
	"testing"
	"time"
)

// TestARCConfigRulesAreEnforced creates a panel, controls and an ARC assertion
// rule with a wait period through commands, and checks that changes of the
// controls are then decided under it, as under the Corefile's rules.
func TestARCConfigRulesAreEnforced(t *testing.T) {
	s := NewState()
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	corefile := Command{Controls: []string{"east"}, Rules: []Rule{{Name: "core", Kind: Assertion, Controls: []string{"east"}, Min: 0}}}
	run := func(at time.Duration, c Command) error {
		c.Time, c.Controls, c.Rules = t0.Add(at), corefile.Controls, corefile.Rules
		return s.Apply(s.Index+1, &c)
	}
	for _, c := range []*ARCCommand{{CreatePanel: "p"}, {CreateControl: "a", Panel: "p"}, {CreateControl: "b", Panel: "p"}, {CreateControl: "c", Panel: "p"}} {
		if err := run(0, Command{ARC: c}); err != nil {
			t.Fatal(err)
		}
	}
	rule := ARCRule{Name: "two-up", Panel: "p", Kind: RuleAssertion, Asserted: []string{"a", "b", "c"}, Type: RuleAtLeast, Threshold: 2, WaitMs: 60000}
	for _, bad := range []ARCRule{
		{Name: "x", Panel: "p", Kind: RuleAssertion, Asserted: []string{"a", "b"}, Type: RuleAtLeast, Threshold: 3},
		{Name: "x", Panel: "p", Kind: RuleAssertion, Asserted: []string{"a", "east"}, Type: RuleAnd},
		{Name: "x", Panel: "p", Kind: RuleAssertion, Asserted: []string{"a"}, Type: "MOST"},
		{Name: "x", Panel: "p", Kind: RuleGating, Gating: []string{"a", "b"}, Targets: []string{"c"}, Type: RuleOr},
		{Name: "x", Panel: "p", Kind: RuleAssertion, Asserted: []string{"a"}, Type: RuleOr, WaitMs: -1},
		{Name: "core", Panel: "p", Kind: RuleAssertion, Asserted: []string{"a"}, Type: RuleOr},
	} {
		if err := run(0, Command{ARC: &ARCCommand{CreateRule: &bad}}); err == nil {
			t.Errorf("rule %+v was created", bad)
		}
	}
	if err := run(0, Command{ARC: &ARCCommand{CreateRule: &rule}}); err != nil {
		t.Fatal(err)
	}
	if err := run(time.Second, Command{Set: map[string]bool{"a": false, "b": false}}); refusalCode(err) != "two-up" {
		t.Errorf("a and b off under two-up: %v, want refused by two-up", err)
	}
	if err := run(time.Second, Command{Set: map[string]bool{"a": false}}); err != nil {
		t.Fatalf("a off leaves 2 of 3: %v", err)
	}
	if err := run(2*time.Second, Command{Set: map[string]bool{"a": true}}); refusalCode(err) != "two-up" {
		t.Errorf("a on again within the wait period: %v, want refused by two-up", err)
	}
	if err := run(2*time.Second, Command{Set: map[string]bool{"a": true}, BreakGlass: []string{"two-up"}}); err != nil {
		t.Errorf("a on with two-up overridden: %v", err)
	}
	if err := run(3*time.Second, Command{ARC: &ARCCommand{DeleteControl: "a"}}); refusalCode(err) != CodeARCConflict {
		t.Errorf("deleting a control a rule names: %v", err)
	}
	if err := run(3*time.Second, Command{ARC: &ARCCommand{DeletePanel: "p"}}); refusalCode(err) != CodeARCConflict {
		t.Errorf("deleting a panel with controls: %v", err)
	}
	if err := run(3*time.Second, Command{ARC: &ARCCommand{UpdateRule: "two-up", WaitMs: 0}}); err != nil {
		t.Fatal(err)
	}
	if err := run(4*time.Second, Command{Set: map[string]bool{"b": false}}); err != nil {
		t.Errorf("b off without a wait period (a and c on): %v", err)
	}
	for _, c := range []*ARCCommand{{DeleteRule: "two-up"}, {DeleteControl: "a"}, {DeleteControl: "b"}, {DeleteControl: "c"}, {DeletePanel: "p"}} {
		if err := run(5*time.Second, Command{ARC: c}); err != nil {
			t.Fatalf("%+v: %v", c, err)
		}
	}
	if err := run(5*time.Second, Command{Set: map[string]bool{"a": true}}); err == nil {
		t.Error("a deleted control was set")
	}
}

func TestARCRuleInvertedAndGatingMapToRules(t *testing.T) {
	inv := ARCRule{Name: "i", Kind: RuleAssertion, Asserted: []string{"a", "b", "c"}, Type: RuleAtLeast, Threshold: 1, Inverted: true}
	if r := inv.Rules(); len(r) != 1 || r[0].Min != 3 || !r[0].Inverted {
		t.Errorf("not at least 1 of 3 on: %+v, want at least 3 off", r)
	}
	and := ARCRule{Name: "n", Kind: RuleAssertion, Asserted: []string{"a", "b"}, Type: RuleAnd, Inverted: true}
	if r := and.Rules(); r[0].Min != 1 {
		t.Errorf("not all of 2 on: %+v, want at least 1 off", r)
	}
	g := ARCRule{Name: "g", Kind: RuleGating, Gating: []string{"gate"}, Targets: []string{"a"}, Type: RuleOr, WaitMs: 5}
	if r := g.Rules(); len(r) != 2 || r[0].Gate != "gate" || r[1].Kind != Wait || r[1].Wait != 5*time.Millisecond {
		t.Errorf("gating with a wait: %+v", r)
	}
}
