package control

import (
	"errors"
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func cmdAt(at time.Time, set map[string]bool, rules ...Rule) *Command {
	return &Command{Time: at, Token: "ops", Member: "dns-a", Set: set, Rules: rules,
		Controls: []string{"east", "west", "gate", "master"}, Checks: []string{"web"}}
}

var atLeastOne = Rule{Name: "one-region", Kind: Assertion, Min: 1, Controls: []string{"east", "west"}}

func TestAssertionRefusesTheSecondOfTwoChanges(t *testing.T) {
	s := NewState()
	if err := s.Apply(1, cmdAt(t0, map[string]bool{"east": false}, atLeastOne)); err != nil {
		t.Fatalf("first change: %v", err)
	}
	err := s.Apply(2, cmdAt(t0, map[string]bool{"west": false}, atLeastOne))
	var ref *Refusal
	if !errors.As(err, &ref) || ref.Rule != "one-region" || !errors.Is(err, ErrRefused) {
		t.Fatalf("second change: %v, want a refusal by one-region", err)
	}
	if !strings.Contains(err.Error(), "at least 1 of {east, west} on") {
		t.Errorf("refusal %q does not say what the rule asserts", err)
	}
	if s.On("east") || !s.On("west") {
		t.Errorf("state east=%t west=%t, want east off, west on", s.On("east"), s.On("west"))
	}
	if len(s.Audit) != 2 || s.Audit[0].Refused != "" || s.Audit[1].Rule != "one-region" || s.Audit[1].Token != "ops" {
		t.Errorf("audit %+v, want an applied then a refused entry", s.Audit)
	}
}

func TestBatchIsAllOrNothing(t *testing.T) {
	s := NewState()
	c := cmdAt(t0, map[string]bool{"east": false, "west": false}, atLeastOne)
	c.Override = map[string]string{"web": Unhealthy}
	if err := s.Apply(1, c); err == nil {
		t.Fatal("a batch turning both off was applied")
	}
	if !s.On("east") || !s.On("west") || len(s.Overrides) != 0 {
		t.Errorf("refused batch left east=%t west=%t overrides=%v", s.On("east"), s.On("west"), s.Overrides)
	}
	c = cmdAt(t0, map[string]bool{"east": false, "west": true}, atLeastOne)
	c.Override = map[string]string{"web": Unhealthy}
	if err := s.Apply(2, c); err != nil {
		t.Fatal(err)
	}
	if s.On("east") || s.Overrides["web"] != false || len(s.Overrides) != 1 {
		t.Errorf("batch applied partly: east=%t overrides=%v", s.On("east"), s.Overrides)
	}
}

func TestInvertedAssertion(t *testing.T) {
	r := Rule{Name: "drained", Kind: Assertion, Min: 1, Inverted: true, Controls: []string{"east", "west"}}
	s := NewState()
	if err := s.Apply(1, cmdAt(t0, map[string]bool{"west": false}, r)); err != nil {
		t.Fatal(err)
	}
	if err := s.Apply(2, cmdAt(t0, map[string]bool{"west": true}, r)); err == nil || !strings.Contains(err.Error(), "at least 1 of {east, west} off") {
		t.Fatalf("turning the last one on again: %v, want a refusal (at least 1 off)", err)
	}
}

func TestGatingNeedsTheGateOn(t *testing.T) {
	g := Rule{Name: "master", Kind: Gating, Gate: "gate", Controls: []string{"east"}}
	s := NewState()
	if err := s.Apply(1, cmdAt(t0, map[string]bool{"gate": false}, g)); err != nil {
		t.Fatal(err)
	}
	err := s.Apply(2, cmdAt(t0, map[string]bool{"east": false}, g))
	if err == nil || !strings.Contains(err.Error(), "gate is off") {
		t.Fatalf("target changed while the gate is off: %v", err)
	}
	if err := s.Apply(3, cmdAt(t0, map[string]bool{"east": false, "gate": true}, g)); err != nil {
		t.Fatalf("turning the gate on with the target in one batch: %v", err)
	}
}

func TestWaitPeriod(t *testing.T) {
	w := Rule{Name: "settle", Kind: Wait, Wait: 5 * time.Second, Controls: []string{"east", "west"}}
	s := NewState()
	if err := s.Apply(1, cmdAt(t0, map[string]bool{"east": false}, w)); err != nil {
		t.Fatal(err)
	}
	if err := s.Apply(2, cmdAt(t0.Add(4*time.Second), map[string]bool{"west": false}, w)); err == nil {
		t.Fatal("change 4s after another passed a 5s wait")
	}
	if err := s.Apply(3, cmdAt(t0.Add(5*time.Second), map[string]bool{"west": false}, w)); err != nil {
		t.Fatalf("change after the wait: %v", err)
	}
}

func TestBreakGlassBypassesNamedRulesOnly(t *testing.T) {
	g := Rule{Name: "master", Kind: Gating, Gate: "gate", Controls: []string{"east", "west"}}
	s := NewState()
	s.Controls["gate"] = false
	c := cmdAt(t0, map[string]bool{"east": false, "west": false}, atLeastOne, g)
	c.BreakGlass = []string{"master"}
	if err := s.Apply(1, c); err == nil || !strings.Contains(err.Error(), "one-region") {
		t.Fatalf("break-glass of master passed one-region too: %v", err)
	}
	c.BreakGlass = []string{"master", "one-region"}
	if err := s.Apply(2, c); err != nil {
		t.Fatal(err)
	}
	last := s.Audit[len(s.Audit)-1]
	if len(last.BreakGlass) != 2 {
		t.Errorf("audit break_glass %v, want both rules logged as bypassed", last.BreakGlass)
	}
	c.BreakGlass = []string{"nope"}
	if err := s.Apply(3, c); err == nil || !strings.Contains(err.Error(), "unknown rule 'nope'") {
		t.Errorf("break-glass of an unknown rule: %v", err)
	}
}

func TestUnknownControlAndCheckRefused(t *testing.T) {
	s := NewState()
	if err := s.Apply(1, cmdAt(t0, map[string]bool{"north": false})); err == nil || !strings.Contains(err.Error(), "unknown control 'north'") {
		t.Errorf("unknown control: %v", err)
	}
	c := cmdAt(t0, nil)
	c.Override = map[string]string{"db": Healthy}
	if err := s.Apply(2, c); err == nil || !strings.Contains(err.Error(), "unknown check 'db'") {
		t.Errorf("unknown check: %v", err)
	}
	c = cmdAt(t0, nil)
	c.Checks = []string{"web", "east"}
	c.Override = map[string]string{"east": Unhealthy}
	if err := s.Apply(3, c); err == nil || !strings.Contains(err.Error(), "check east is a routing control") {
		t.Errorf("an override of a control: %v", err)
	}
	if len(s.Controls) != 0 || len(s.Overrides) != 0 {
		t.Errorf("refused changes left %v %v", s.Controls, s.Overrides)
	}
}

func TestAuditIsBounded(t *testing.T) {
	s := NewState()
	for i := range MaxAudit + 10 {
		s.Apply(uint64(i+1), cmdAt(t0, map[string]bool{"east": i%2 == 0}))
	}
	if len(s.Audit) != MaxAudit || s.Audit[len(s.Audit)-1].Seq != MaxAudit+10 || s.Audit[0].Seq != 11 {
		t.Errorf("audit holds %d entries, seq %d..%d; want the last %d", len(s.Audit), s.Audit[0].Seq, s.Audit[len(s.Audit)-1].Seq, MaxAudit)
	}
}

func TestCheckRules(t *testing.T) {
	controls := []string{"a", "b", "c"}
	for _, tc := range []struct {
		rules []Rule
		want  string
	}{
		{[]Rule{{Name: "x", Kind: Assertion, Min: 1, Controls: []string{"a", "zz"}}}, "unknown control 'zz'"},
		{[]Rule{{Name: "x", Kind: Assertion, Min: 3, Controls: []string{"a", "b"}}}, "can never hold"},
		{[]Rule{{Name: "x", Kind: Gating, Gate: "a", Controls: []string{"b"}}, {Name: "y", Kind: Gating, Gate: "b", Controls: []string{"c"}},
			{Name: "z", Kind: Gating, Gate: "c", Controls: []string{"a"}}}, "cycle: a -> b -> c -> a"},
		{[]Rule{{Name: "x", Kind: Wait, Wait: time.Second, Controls: []string{"a"}}, {Name: "x", Kind: Wait, Wait: time.Second, Controls: []string{"b"}}}, "defined twice"},
	} {
		err := CheckRules(tc.rules, controls)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("CheckRules(%v) = %v, want %q", tc.rules, err, tc.want)
		}
	}
	if err := CheckRules([]Rule{atLeastOne}, []string{"east", "west"}); err != nil {
		t.Errorf("a valid rule: %v", err)
	}
}

func TestBrokenAtStartup(t *testing.T) {
	s := NewState()
	s.Controls["east"], s.Controls["west"] = false, false
	if b := Broken([]Rule{atLeastOne}, s.On); len(b) != 1 || b[0].Name != "one-region" {
		t.Errorf("Broken = %v, want one-region", b)
	}
	s.Controls["west"] = true
	if b := Broken([]Rule{atLeastOne}, s.On); len(b) != 0 {
		t.Errorf("Broken = %v, want none", b)
	}
}
