package test

import (
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

// shippedRule is one alerting rule of deploy/prometheus/healthroute.rules.yml.
type shippedRule struct {
	Alert       string            `yaml:"alert"`
	Expr        string            `yaml:"expr"`
	For         string            `yaml:"for"`
	Annotations map[string]string `yaml:"annotations"`
}

// shippedRules reads the repository's alerting rules.
func shippedRules(t *testing.T) []shippedRule {
	t.Helper()
	b, err := os.ReadFile("../deploy/prometheus/healthroute.rules.yml")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Groups []struct {
			Rules []shippedRule `yaml:"rules"`
		} `yaml:"groups"`
	}
	if err := yaml.Unmarshal(b, &doc); err != nil {
		t.Fatalf("healthroute.rules.yml: %v", err)
	}
	var out []shippedRule
	for _, g := range doc.Groups {
		out = append(out, g.Rules...)
	}
	if len(out) == 0 {
		t.Fatal("healthroute.rules.yml has no rules")
	}
	return out
}

// TestAlertingRulesTestedAndTextsTrue: every shipped rule has a promtool test in
// which it fires and is checked not to fire on a healthy server without fleet or
// controls (the last test group of healthroute.rules.test.yml); no annotation states
// a duration the rule does not have (a "for N minutes" that its `for` is not).
func TestAlertingRulesTestedAndTextsTrue(t *testing.T) {
	b, err := os.ReadFile("../deploy/prometheus/healthroute.rules.test.yml")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Tests []struct {
			Series []struct {
				Series string `yaml:"series"`
			} `yaml:"input_series"`
			Alerts []struct {
				Name string `yaml:"alertname"`
				Exp  []any  `yaml:"exp_alerts"`
			} `yaml:"alert_rule_test"`
		} `yaml:"tests"`
	}
	if err := yaml.Unmarshal(b, &doc); err != nil {
		t.Fatalf("healthroute.rules.test.yml: %v", err)
	}
	if len(doc.Tests) == 0 {
		t.Fatal("healthroute.rules.test.yml has no tests")
	}
	fires := map[string]bool{}
	for _, tc := range doc.Tests {
		for _, a := range tc.Alerts {
			fires[a.Name] = fires[a.Name] || len(a.Exp) > 0
		}
	}
	healthy := doc.Tests[len(doc.Tests)-1]
	for _, s := range healthy.Series {
		if strings.Contains(s.Series, "_fleet_") || strings.Contains(s.Series, "_control_") {
			t.Errorf("the healthy server's test group has %s: a server without fleet or controls exports no such series", s.Series)
		}
	}
	quiet := map[string]bool{}
	for _, a := range healthy.Alerts {
		if len(a.Exp) > 0 {
			t.Errorf("the healthy server's test group expects %s to fire", a.Name)
		}
		quiet[a.Name] = true
	}
	duration := regexp.MustCompile(`(?i)\b(\d+)\s*(second|minute|hour)s?\b`)
	for _, r := range shippedRules(t) {
		if !fires[r.Alert] {
			t.Errorf("%s has no promtool test in which it fires", r.Alert)
		}
		if !quiet[r.Alert] {
			t.Errorf("%s is not checked quiet on a healthy server without fleet or controls", r.Alert)
		}
		forDur := time.Duration(0)
		if r.For != "" {
			if forDur, err = time.ParseDuration(r.For); err != nil {
				t.Errorf("%s: for %q: %v", r.Alert, r.For, err)
			}
		}
		for name, text := range r.Annotations {
			for _, m := range duration.FindAllStringSubmatch(text, -1) {
				short := m[1] + map[string]string{"second": "s", "minute": "m", "hour": "h"}[strings.ToLower(m[2])]
				d, _ := time.ParseDuration(short)
				// A window of the expression ("in the last 15 minutes") is the rule's
				// own; only a duration the expression does not carry is a claim.
				window := "[" + short + "]"
				if d != forDur && !strings.Contains(r.Expr, window) {
					t.Errorf("%s's %s says %q, but its for is %q and its expression has no %s window", r.Alert, name, m[0], r.For, window)
				}
			}
		}
	}
}
