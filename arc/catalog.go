package arc

import (
	"slices"

	"github.com/healthroute/healthroute/control"
)

// catalog is every control panel, routing control and safety rule as this
// member has them: the Corefile's (panel PanelName, from the node's policy) and
// those created through the configuration API (in the replicated state).
type catalog struct {
	node   *control.Node // nil: no replicated state, an empty catalog
	st     *control.State
	policy control.Policy
}

// rc is a routing control and its panel.
type rc struct{ panel, name string }

func load(be Backend) *catalog {
	c := &catalog{node: be.Node(), st: control.NewState()}
	if c.node != nil {
		c.st, c.policy = c.node.State(), c.node.Policy()
	}
	return c
}

// panels returns every control panel, the Corefile's first.
func (c *catalog) panels() []string {
	var out []string
	if c.node != nil {
		out = append(out, PanelName)
	}
	if c.st.ARC != nil {
		out = append(out, c.st.ARC.Panels...)
	}
	return out
}

// controls returns the routing controls, of panel when it is not "", sorted by
// panel (the Corefile's first) and name.
func (c *catalog) controls(panel string) []rc {
	var out []rc
	if panel == "" || panel == PanelName {
		for _, n := range slices.Sorted(slices.Values(c.policy.Controls)) {
			out = append(out, rc{PanelName, n})
		}
	}
	for _, n := range c.st.ARCControls() {
		if p := c.st.ARC.Controls[n]; panel == "" || p == panel {
			out = append(out, rc{p, n})
		}
	}
	slices.SortStableFunc(out, func(a, b rc) int {
		if (a.panel == PanelName) != (b.panel == PanelName) {
			if a.panel == PanelName {
				return -1
			}
			return 1
		}
		if a.panel != b.panel {
			if a.panel < b.panel {
				return -1
			}
			return 1
		}
		return 0
	})
	return out
}

// control returns the routing control arn names, and whether it exists.
func (c *catalog) control(arn string) (rc, bool) {
	panel, name, ok := nameOf(arn, "routingcontrol")
	if !ok {
		return rc{}, false
	}
	want := rc{panel, name}
	return want, slices.Contains(c.controls(panel), want)
}

// rule is a safety rule: a Corefile one (ARC nil) or one created through the API.
type rule struct {
	panel string
	core  []control.Rule // the Corefile's rule (one)
	arc   *control.ARCRule
}

func (r rule) name() string {
	if r.arc != nil {
		return r.arc.Name
	}
	return r.core[0].Name
}

// rules returns the safety rules, of panel when it is not "".
func (c *catalog) rules(panel string) []rule {
	var out []rule
	if c.node != nil && (panel == "" || panel == PanelName) {
		for _, r := range c.policy.Rules {
			out = append(out, rule{panel: PanelName, core: []control.Rule{r}})
		}
	}
	if c.st.ARC != nil {
		for i := range c.st.ARC.Rules {
			if r := &c.st.ARC.Rules[i]; panel == "" || r.Panel == panel {
				out = append(out, rule{panel: r.Panel, arc: r})
			}
		}
	}
	return out
}

// rule returns the safety rule arn names, and whether it exists.
func (c *catalog) rule(arn string) (rule, bool) {
	panel, name, ok := nameOf(arn, "safetyrule")
	if !ok {
		return rule{}, false
	}
	for _, r := range c.rules(panel) {
		if r.name() == name {
			return r, true
		}
	}
	return rule{}, false
}

// ruleARN returns the ARN of the safety rule named name.
func (c *catalog) ruleARN(name string) string {
	for _, r := range c.rules("") {
		if r.name() == name {
			return RuleARNIn(r.panel, name)
		}
	}
	return RuleARN(name)
}
