package test

import (
	"encoding/json"
	"os"
	"strconv"
	"strings"
	"testing"
)

// dashPanel is one panel of deploy/grafana/healthroute.json, as far as the tests
// read it.
type dashPanel struct {
	Type        string `json:"type"`
	Title       string `json:"title"`
	FieldConfig struct {
		Defaults struct {
			Color struct {
				Mode string `json:"mode"`
			} `json:"color"`
			Thresholds struct {
				Steps []struct {
					Color string   `json:"color"`
					Value *float64 `json:"value"`
				} `json:"steps"`
			} `json:"thresholds"`
			Mappings []struct {
				Type    string `json:"type"`
				Options map[string]struct {
					Text  string `json:"text"`
					Color string `json:"color"`
				} `json:"options"`
			} `json:"mappings"`
		} `json:"defaults"`
	} `json:"fieldConfig"`
	Targets []struct {
		Expr    string `json:"expr"`
		Instant bool   `json:"instant"`
		Range   bool   `json:"range"`
		Format  string `json:"format"`
	} `json:"targets"`
}

// dashboardPanels reads the repository's Grafana dashboard's panels.
func dashboardPanels(t *testing.T) []dashPanel {
	t.Helper()
	b, err := os.ReadFile("../deploy/grafana/healthroute.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []dashPanel `json:"panels"`
	}
	if err := json.Unmarshal(b, &dash); err != nil {
		t.Fatalf("deploy/grafana/healthroute.json: %v", err)
	}
	return dash.Panels
}

// colour is the colour Grafana gives value v in p: a value mapping's, or else the
// threshold step v reaches.
func (p dashPanel) colour(v float64) string {
	d := p.FieldConfig.Defaults
	for _, m := range d.Mappings {
		if o, ok := m.Options[strconv.FormatFloat(v, 'f', -1, 64)]; m.Type == "value" && ok && o.Color != "" {
			return o.Color
		}
	}
	c := ""
	for _, s := range d.Thresholds.Steps {
		if s.Value == nil || v >= *s.Value {
			c = s.Color
		}
	}
	return c
}

// statePanel says whether p shows a state (stat, state timeline, table), and which
// value is the good one: 1 for a check's health, 0 for a count of what is wrong.
func statePanel(p dashPanel) (good, bad float64, ok bool) {
	if p.Type != "stat" && p.Type != "state-timeline" && p.Type != "table" {
		return 0, 0, false
	}
	if len(p.Targets) == 1 && strings.HasPrefix(p.Targets[0].Expr, "coredns_healthroute_check_healthy") {
		return 1, 0, true
	}
	return 0, 1, true
}

// TestDashboardStatePanelsColourState: every state panel colours by thresholds and
// value mappings, the good value green and the bad one red (Grafana's defaults
// colour both green); the check health timeline maps 1 to "healthy" and 0 to
// "unhealthy"; a table lists what holds now (instant queries, not ranges).
func TestDashboardStatePanelsColourState(t *testing.T) {
	n := 0
	for _, p := range dashboardPanels(t) {
		good, bad, ok := statePanel(p)
		if !ok {
			continue
		}
		n++
		d := p.FieldConfig.Defaults
		if d.Color.Mode != "thresholds" || len(d.Thresholds.Steps) == 0 || len(d.Mappings) == 0 {
			t.Errorf("%s (%s): color mode %q, %d threshold steps, %d mappings; want thresholds with steps and mappings", p.Title, p.Type, d.Color.Mode, len(d.Thresholds.Steps), len(d.Mappings))
		}
		if p.Type == "table" {
			for _, tg := range p.Targets {
				if !tg.Instant || tg.Range || tg.Format != "table" {
					t.Errorf("%s: target %q is not an instant table query (instant %v, range %v, format %q)", p.Title, tg.Expr, tg.Instant, tg.Range, tg.Format)
				}
			}
			if c := p.colour(1); c != "red" {
				t.Errorf("%s: a listed (failing) row is %q, want red", p.Title, c)
			}
			continue
		}
		if c := p.colour(good); c != "green" {
			t.Errorf("%s: the good value %v is %q, want green", p.Title, good, c)
		}
		if c := p.colour(bad); c != "red" {
			t.Errorf("%s: the bad value %v is %q, want red", p.Title, bad, c)
		}
		if good == 1 {
			texts := map[string]string{}
			for _, m := range d.Mappings {
				for v, o := range m.Options {
					texts[v] = o.Text
				}
			}
			if texts["1"] != "healthy" || texts["0"] != "unhealthy" {
				t.Errorf("%s: value mappings %v, want 1 healthy and 0 unhealthy", p.Title, texts)
			}
		}
	}
	if n < 5 {
		t.Errorf("%d state panels, want the three counts, the check health timeline and the failing-checks table", n)
	}
}
