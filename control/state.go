package control

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// MaxAudit is how many audit entries the replicated state keeps, newest last.
const MaxAudit = 1000

// Override values of a check in a Command.
const (
	Healthy   = "healthy"
	Unhealthy = "unhealthy"
	None      = "none" // back to its probes
)

// Command is one change as the leader proposes it: every control it sets and every
// check override, applied together or not at all. The leader stamps Time and its
// rules, so that every member decides it the same way.
type Command struct {
	Time       time.Time         `json:"time"`
	Token      string            `json:"token"`  // the name of the bearer token that asked for it
	Member     string            `json:"member"` // the member whose API it came through
	Reason     string            `json:"reason,omitempty"`
	Set        map[string]bool   `json:"set,omitempty"`         // control -> on
	Override   map[string]string `json:"override,omitempty"`    // check -> Healthy, Unhealthy or None
	BreakGlass []string          `json:"break_glass,omitempty"` // rules to bypass, by name
	Rules      []Rule            `json:"rules"`                 // the leader's rules
	Controls   []string          `json:"controls"`              // the controls the leader's configuration defines
	Checks     []string          `json:"checks,omitempty"`      // the checks it may override
	API        *APICommand       `json:"api,omitempty"`         // a Route 53 API call; then Set and Override are empty
	Shift      *ShiftCommand     `json:"shift,omitempty"`       // a zonal shift started, updated or cancelled; then Set and Override are empty
	ARC        *ARCCommand       `json:"arc,omitempty"`         // ARC's configuration changed; then Set and Override are empty
}

// Entry is one audit record: a change applied or refused.
type Entry struct {
	Seq        uint64            `json:"seq"`
	Time       time.Time         `json:"time"`
	Token      string            `json:"token"`
	Member     string            `json:"member"`
	Reason     string            `json:"reason,omitempty"`
	Set        map[string]bool   `json:"set,omitempty"`
	Override   map[string]string `json:"override,omitempty"`
	BreakGlass []string          `json:"break_glass,omitempty"` // the rules it bypassed (and would have broken)
	Refused    string            `json:"refused,omitempty"`     // why it was refused; "" applied
	Rule       string            `json:"rule,omitempty"`        // the rule that refused it
}

// State is the replicated state: what the controls and overrides are, when each
// control last changed, and the audit history.
type State struct {
	Index     uint64               `json:"index"`          // the raft index of the last command applied
	Term      uint64               `json:"term,omitempty"` // ... and its term (0: written by an earlier version)
	Seq       uint64               `json:"seq"`            // commands applied or refused
	Controls  map[string]bool      `json:"controls"`
	Changed   map[string]time.Time `json:"changed"`
	Overrides map[string]bool      `json:"overrides"`
	Audit     []Entry              `json:"audit"`
	API       *APIState            `json:"api,omitempty"`          // what the Route 53-compatible API manages
	Shifts    []ZonalShift         `json:"zonal_shifts,omitempty"` // zonal shifts, newest last; replaced whole, never changed in place
	ARC       *ARCConfig           `json:"arc,omitempty"`          // what ARC's configuration API created; replaced whole, never changed in place
}

// NewState returns the empty state: every control on, no overrides.
func NewState() *State {
	return &State{Controls: map[string]bool{}, Changed: map[string]time.Time{}, Overrides: map[string]bool{}}
}

// On reports whether control c is on; a control never set is on.
func (s *State) On(c string) bool {
	v, ok := s.Controls[c]
	return !ok || v
}

// Clone returns a deep copy of s: views and snapshots read it while Apply goes on.
func (s *State) Clone() *State {
	c := *s
	c.Controls, c.Changed, c.Overrides = maps.Clone(s.Controls), maps.Clone(s.Changed), maps.Clone(s.Overrides)
	c.Audit = slices.Clone(s.Audit)
	c.API = s.API // shared: an API command replaces it whole (applyAPI), never changes it in place
	return &c
}

// Refusal is a change the state machine refused, naming the rule it would break.
type Refusal struct {
	Rule     string // "" for a refusal that is no rule's (unknown control)
	Reason   string
	Code     string   // a refused API command's Route 53 error code
	Messages []string // an InvalidChangeBatch's messages, one per change refused
}

func (r *Refusal) Error() string { return r.Reason }

// ErrRefused matches every *Refusal with errors.Is.
var ErrRefused = errors.New("refused")

func (r *Refusal) Is(target error) bool { return target == ErrRefused }

// Apply decides cmd against s and applies it when allowed, at raft index index.
// Every decision is recorded in the audit history. It returns nil when applied,
// else the *Refusal.
func (s *State) Apply(index uint64, cmd *Command) error {
	s.Index = index
	if cmd.API != nil { // API calls keep a change log of their own, not the audit
		if err := s.applyAPI(index, cmd); err != nil {
			return err
		}
		return nil
	}
	s.Seq++
	e := Entry{Seq: s.Seq, Time: cmd.Time, Token: cmd.Token, Member: cmd.Member, Reason: cmd.Reason,
		Set: cmd.Set, Override: cmd.Override}
	if cmd.Shift != nil || cmd.ARC != nil { // audited like a control change
		var err error
		if cmd.Shift != nil {
			err = s.applyShift(cmd)
		} else {
			err = s.applyARC(cmd)
		}
		if err != nil {
			e.Refused = err.Error()
		}
		s.audit(e)
		return err
	}
	bypassed, ref := s.decide(cmd)
	if ref != nil {
		e.Refused, e.Rule = ref.Reason, ref.Rule
	} else {
		e.BreakGlass = bypassed
		for c, on := range cmd.Set {
			if s.On(c) != on {
				s.Changed[c] = cmd.Time
			}
			s.Controls[c] = on
		}
		for c, v := range cmd.Override {
			switch v {
			case None:
				delete(s.Overrides, c)
			default:
				s.Overrides[c] = v == Healthy
			}
		}
	}
	s.audit(e)
	if ref != nil {
		return ref
	}
	return nil
}

// audit appends e to the audit history, keeping the newest MaxAudit.
func (s *State) audit(e Entry) {
	s.Audit = append(s.Audit, e)
	if n := len(s.Audit) - MaxAudit; n > 0 {
		s.Audit = slices.Delete(s.Audit, 0, n)
	}
}

// decide returns the refusal of cmd, nil when it may apply, and the break-glass
// rules it bypassed that it would have broken.
func (s *State) decide(cmd *Command) (bypassed []string, ref *Refusal) {
	controls := append(slices.Clone(cmd.Controls), s.ARCControls()...)
	rules := append(slices.Clone(cmd.Rules), s.arcRules()...)
	for _, c := range slices.Sorted(maps.Keys(cmd.Set)) {
		if !slices.Contains(controls, c) {
			return nil, &Refusal{Reason: fmt.Sprintf("unknown control '%s'", c)}
		}
	}
	for _, c := range slices.Sorted(maps.Keys(cmd.Override)) {
		if v := cmd.Override[c]; v != Healthy && v != Unhealthy && v != None {
			return nil, &Refusal{Reason: fmt.Sprintf("check %s: override '%s', expected healthy, unhealthy or none", c, v)}
		}
		if !slices.Contains(cmd.Checks, c) {
			return nil, &Refusal{Reason: fmt.Sprintf("unknown check '%s'", c)}
		}
		if slices.Contains(cmd.Controls, c) { // an override would pass the safety rules by
			return nil, &Refusal{Reason: fmt.Sprintf("check %s is a routing control: set it on or off, under the safety rules, not by an override", c)}
		}
	}
	for _, b := range cmd.BreakGlass {
		if !slices.ContainsFunc(rules, func(r Rule) bool { return r.Name == b }) {
			return nil, &Refusal{Reason: fmt.Sprintf("break_glass: unknown rule '%s'", b)}
		}
	}
	after := func(c string) bool {
		if v, ok := cmd.Set[c]; ok {
			return v
		}
		return s.On(c)
	}
	changes := func(c string) bool { _, ok := cmd.Set[c]; return ok && after(c) != s.On(c) }
	for _, r := range rules {
		why := s.breaks(r, cmd, after, changes)
		if why == "" {
			continue
		}
		if slices.Contains(cmd.BreakGlass, r.Name) {
			bypassed = append(bypassed, r.Name)
			continue
		}
		return nil, &Refusal{Rule: r.Name, Reason: fmt.Sprintf("refused by rule %s (%s): %s", r.Name, r, why)}
	}
	return bypassed, nil
}

// breaks says how cmd would break r ("" when it would not). A rule is judged only
// when cmd changes one of its controls, so a rule broken already does not block
// unrelated changes.
func (s *State) breaks(r Rule, cmd *Command, after, changes func(string) bool) string {
	var changed []string
	for _, c := range r.Controls {
		if changes(c) {
			changed = append(changed, c)
		}
	}
	if len(changed) == 0 {
		return ""
	}
	switch r.Kind {
	case Assertion:
		if !assertionHolds(r, after) {
			n := 0
			for _, c := range r.Controls {
				if after(c) != r.Inverted {
					n++
				}
			}
			return fmt.Sprintf("turning %s %s would leave %d", strings.Join(changed, ", "), onOff(after(changed[0])), n)
		}
	case Gating:
		if !after(r.Gate) {
			return fmt.Sprintf("%s is off", r.Gate)
		}
	case Wait:
		for _, c := range r.Controls {
			if at, ok := s.Changed[c]; ok && cmd.Time.Sub(at) < r.Wait {
				return fmt.Sprintf("%s changed at %s, %s ago", c, at.UTC().Format(time.RFC3339Nano), cmd.Time.Sub(at).Round(time.Millisecond))
			}
		}
	}
	return ""
}

func onOff(on bool) string {
	if on {
		return "on"
	}
	return "off"
}
