// Package control holds healthroute's routing controls: named on/off switches and
// per-check overrides, kept in one state replicated across the fleet with
// hashicorp/raft and on disk, changed only when the safety rules allow it.
//
// The state machine (State.Apply) is deterministic: it decides a change from the
// command alone (which carries the leader's time and rules) and the state before
// it, so every member that applies the same log holds the same state and gives the
// same verdicts.
package control

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Kind is what a safety rule asserts.
type Kind string

// The safety rule kinds.
const (
	// Assertion: at least Min of Controls are on (Inverted: at least Min are off).
	Assertion Kind = "assertion"
	// Gating: Targets change only while Gate is on.
	Gating Kind = "gating"
	// Wait: after any of Controls changed, none of them changes again for Wait.
	Wait Kind = "wait"
)

// Rule is one safety rule, as the Corefile defines it.
type Rule struct {
	Name     string        `json:"name"`
	Kind     Kind          `json:"kind"`
	Controls []string      `json:"controls"`           // assertion and wait: the set; gating: the targets
	Min      int           `json:"min,omitempty"`      // assertion
	Inverted bool          `json:"inverted,omitempty"` // assertion: count controls that are off
	Gate     string        `json:"gate,omitempty"`     // gating: the switch that must be on
	Wait     time.Duration `json:"wait,omitempty"`     // wait
}

// String describes r in words, for errors and the status page.
func (r Rule) String() string {
	set := strings.Join(r.Controls, ", ")
	switch r.Kind {
	case Assertion:
		state := "on"
		if r.Inverted {
			state = "off"
		}
		return fmt.Sprintf("at least %d of {%s} %s", r.Min, set, state)
	case Gating:
		return fmt.Sprintf("{%s} change only while %s is on", set, r.Gate)
	case Wait:
		return fmt.Sprintf("{%s} change at most once every %s", set, r.Wait)
	}
	return string(r.Kind)
}

// touches reports whether the rule names control c (as a member of its set or
// targets; a gating rule's gate is not touched by changing it).
func (r Rule) touches(c string) bool { return slices.Contains(r.Controls, c) }

// CheckRules validates a rule set against the controls that exist: every name
// known, an assertion's Min reachable, no rule named twice, and no cycle of gating
// rules (a gate that its own targets gate, directly or through others, could never
// be turned on again once off).
func CheckRules(rules []Rule, controls []string) error {
	names := map[string]bool{}
	for _, r := range rules {
		if names[r.Name] {
			return fmt.Errorf("rule %s is defined twice", r.Name)
		}
		names[r.Name] = true
		for _, c := range append(slices.Clone(r.Controls), r.Gate) {
			if c != "" && !slices.Contains(controls, c) {
				return fmt.Errorf("rule %s: unknown control '%s', expected a check of type control", r.Name, c)
			}
		}
		if len(r.Controls) == 0 {
			return fmt.Errorf("rule %s: names no controls", r.Name)
		}
		if r.Kind == Assertion && (r.Min < 0 || r.Min > len(r.Controls)) {
			return fmt.Errorf("rule %s: at least %d of %d controls can never hold, expected 0 to %d", r.Name, r.Min, len(r.Controls), len(r.Controls))
		}
		if r.Kind == Gating && slices.Contains(r.Controls, r.Gate) {
			return fmt.Errorf("rule %s: gate %s is among its own targets", r.Name, r.Gate)
		}
	}
	if cyc := gatingCycle(rules); cyc != nil {
		return fmt.Errorf("gating rules form a cycle: %s (none of them could change once its gate is off)", strings.Join(cyc, " -> "))
	}
	return nil
}

// gatingCycle returns a cycle of controls where each gates the next, nil if none.
func gatingCycle(rules []Rule) []string {
	next := map[string][]string{}
	var gates []string
	for _, r := range rules {
		if r.Kind == Gating {
			if _, ok := next[r.Gate]; !ok {
				gates = append(gates, r.Gate)
			}
			next[r.Gate] = append(next[r.Gate], r.Controls...)
		}
	}
	const (
		grey  = 1
		black = 2
	)
	color := map[string]int{}
	var path []string
	var visit func(c string) []string
	visit = func(c string) []string {
		switch color[c] {
		case grey:
			i := slices.Index(path, c)
			return append(slices.Clone(path[i:]), c)
		case black:
			return nil
		}
		color[c] = grey
		path = append(path, c)
		for _, n := range next[c] {
			if cyc := visit(n); cyc != nil {
				return cyc
			}
		}
		path = path[:len(path)-1]
		color[c] = black
		return nil
	}
	for _, g := range gates {
		if cyc := visit(g); cyc != nil {
			return cyc
		}
	}
	return nil
}

// Broken returns the rules that the control states on (by name; absent: on)
// break as they stand, in rule order: for a rule the state already breaks at
// startup. Wait rules hold in any state.
func Broken(rules []Rule, on func(string) bool) []Rule {
	var out []Rule
	for _, r := range rules {
		if r.Kind == Assertion && !assertionHolds(r, on) {
			out = append(out, r)
		}
	}
	return out
}

func assertionHolds(r Rule, on func(string) bool) bool {
	n := 0
	for _, c := range r.Controls {
		if on(c) != r.Inverted {
			n++
		}
	}
	return n >= r.Min
}
