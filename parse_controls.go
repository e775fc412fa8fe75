package healthroute

import (
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/coredns/caddy"

	"github.com/healthroute/healthroute/control"
	"github.com/healthroute/healthroute/health"
)

// defaultControlsDir is the data directory of the control state when the block
// names none, taken from the server's root.
const defaultControlsDir = "healthroute-control"

// controlsConfig is the `controls { ... }` property: where the replicated control
// state lives, who votes on it, and its safety rules.
type controlsConfig struct {
	Bind    string           // the control port; "": none (a single voter, in-process)
	DataDir string           // absolute, or from the server's root
	Voters  []control.Server // nil: this member alone
	Rules   []control.Rule
	rulePos map[string]pos // where each rule was written
	at      pos            // the controls line, or the first control check's
	bindSet bool
}

// parseControls reads `controls { bind; data_dir; voters; assertion;
// inverted_assertion; gating; wait }` into cfg.Controls. Rules are checked against
// the block's control checks once the whole block is read (finishControls).
func parseControls(c *caddy.Controller, cfg *blockConfig, args []string) error {
	if len(args) != 0 {
		return c.ArgErr()
	}
	cc := &controlsConfig{DataDir: rootPath(c, defaultControlsDir), rulePos: map[string]pos{}, at: pos{c.File(), c.Line()}}
	opts := seen{}
	err := block(c, func(key string, a []string) error {
		switch key {
		case "bind", "data_dir", "voters":
			if err := opts.once(c, "controls: ", key); err != nil {
				return err
			}
		}
		switch key {
		case "bind":
			v, err := oneArg(c, a)
			if err != nil {
				return err
			}
			if ap, err := netip.ParseAddrPort(v); err != nil || ap.Port() == 0 {
				return c.Errf("controls: bind: invalid value '%s', expected ADDRESS:PORT (port 1-65535)", v)
			}
			cc.Bind, cc.bindSet = v, true
		case "data_dir":
			v, err := oneArg(c, a)
			if err != nil {
				return err
			}
			cc.DataDir = rootPath(c, v)
		case "voters":
			if len(a) == 0 {
				return c.ArgErr()
			}
			for _, v := range a {
				name, addr, ok := strings.Cut(v, "=")
				ap, err := netip.ParseAddrPort(addr)
				if !ok || name == "" || err != nil || ap.Port() == 0 {
					return c.Errf("controls: voters: invalid value '%s', expected NAME=ADDRESS:PORT (a member's fleet name and control port)", v)
				}
				if slices.ContainsFunc(cc.Voters, func(s control.Server) bool { return s.ID == name }) {
					return c.Errf("controls: voters: %s is listed twice", name)
				}
				cc.Voters = append(cc.Voters, control.Server{ID: name, Addr: addr})
			}
		case "assertion", "inverted_assertion", "gating", "wait":
			r, err := parseRule(c, key, a)
			if err != nil {
				return err
			}
			if _, dup := cc.rulePos[r.Name]; dup {
				return c.Errf("controls: rule %s is defined twice (first at line %d)", r.Name, cc.rulePos[r.Name].line)
			}
			cc.rulePos[r.Name] = pos{c.File(), c.Line()}
			cc.Rules = append(cc.Rules, r)
		default:
			return c.Errf("controls: unknown property '%s'", key)
		}
		return nil
	})
	cfg.Controls = cc
	return err
}

// parseRule reads one safety rule line.
func parseRule(c *caddy.Controller, key string, a []string) (control.Rule, error) {
	want := map[string]string{
		"assertion":          "assertion NAME N CONTROL... (at least N of the controls on)",
		"inverted_assertion": "inverted_assertion NAME N CONTROL... (at least N of the controls off)",
		"gating":             "gating NAME GATE TARGET... (the targets change only while GATE is on)",
		"wait":               "wait NAME DURATION CONTROL... (after a change of one, none changes again for DURATION)",
	}[key]
	if len(a) < 3 {
		return control.Rule{}, c.Errf("controls: %s: expected %s", key, want)
	}
	r := control.Rule{Name: a[0], Controls: a[2:]}
	switch key {
	case "assertion", "inverted_assertion":
		n, err := strconv.Atoi(a[1])
		if err != nil || n < 0 || n > len(a)-2 {
			return r, c.Errf("controls: %s %s: invalid count '%s', expected a number from 0 to %d (the controls it names)", key, a[0], a[1], len(a)-2)
		}
		r.Kind, r.Min, r.Inverted = control.Assertion, n, key == "inverted_assertion"
	case "gating":
		r.Kind, r.Gate = control.Gating, a[1]
	case "wait":
		d, err := time.ParseDuration(a[1])
		if err != nil || d <= 0 || d > 24*time.Hour {
			return r, c.Errf("controls: wait %s: invalid duration '%s', expected a duration from 1ms to 24h", a[0], a[1])
		}
		r.Kind, r.Wait = control.Wait, d
	}
	return r, nil
}

// controlNames returns the block's checks of type control, sorted.
func controlNames(cfg *blockConfig) []string {
	var out []string
	for name, s := range cfg.Checks {
		if s.Type == health.Control {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// controlsMember is this member's name in the control state: its fleet name, or
// "local" without a fleet.
func controlsMember(cfg *blockConfig) string {
	if cfg.Fleet != nil {
		return cfg.Fleet.Name
	}
	return "local"
}

// nodeConfig is the raft node's configuration of cfg.
func (cc *controlsConfig) nodeConfig(cfg *blockConfig) control.Config {
	nc := control.Config{Name: controlsMember(cfg), Bind: cc.Bind, Voters: cc.Voters, Dir: cc.DataDir}
	if cfg.Fleet != nil {
		nc.Key = cfg.Fleet.Key
	}
	return nc
}

// String describes where the state lives, for logs.
func (cc *controlsConfig) String() string {
	return fmt.Sprintf("data_dir %s, %d voters", cc.DataDir, max(1, len(cc.Voters)))
}
