package operator

import (
	"strings"
	"testing"
	"time"

	"github.com/healthroute/healthroute/view"
)

// TestStatusPageEscapes: names and errors reach the page as text, never as markup.
func TestStatusPageEscapes(t *testing.T) {
	d := buildStatus([]view.Check{{Name: "c1", Type: "http", Target: "http://192.0.2.1/<b>", Healthy: false, Seen: true,
		LastError: `<script>alert(1)</script>`, LastChange: time.Unix(0, 0)}}, nil, time.Unix(90, 0))
	var b strings.Builder
	if err := statusTmpl.Execute(&b, d.page(pageQuery{Page: 1})); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "<script>") || strings.Contains(b.String(), "/<b>") {
		t.Errorf("unescaped text in the page:\n%s", b.String())
	}
	if !strings.Contains(b.String(), "1m ago") {
		t.Error("last change not shown relative to now")
	}
}

func TestStatusPageAgo(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	for _, tc := range []struct {
		d    time.Duration
		want string
	}{{-time.Second, "just now"}, {12 * time.Second, "12s ago"}, {3 * time.Minute, "3m ago"},
		{5 * time.Hour, "5h ago"}, {72 * time.Hour, "3d ago"}} {
		if got := ago(now, now.Add(-tc.d)); got != tc.want {
			t.Errorf("ago(%s) = %q, want %q", tc.d, got, tc.want)
		}
	}
}

// TestStatusPageOrder: trees failing open come first, then those with an unhealthy
// member, and a group two trees share is drawn in full in the first one shown;
// unhealthy checks come before healthy ones.
func TestStatusPageOrder(t *testing.T) {
	yes, no := true, false
	recs := []view.Record{
		{Name: "a.", Type: "A", Policy: "weighted", Healthy: &yes, Members: []view.Member{{ID: "1", Alias: "shared.", Healthy: true}}},
		{Name: "b.", Type: "A", Policy: "failover", Healthy: &yes, Members: []view.Member{
			{ID: "1", Alias: "shared.", Healthy: true}, {ID: "2", Check: "down", Healthy: false}}},
		{Name: "c.", Type: "A", Policy: "simple", Healthy: &no, LastResort: true, Members: []view.Member{{ID: "1", Check: "down", Healthy: false}}},
		{Name: "shared.", Type: "A", Policy: "simple", Healthy: &yes, Members: []view.Member{{ID: "1", Healthy: true}}},
	}
	checks := []view.Check{{Name: "a-up", Healthy: true}, {Name: "down"}, {Name: "z-up", Healthy: true}}
	m := buildStatus(checks, recs, time.Unix(0, 0))
	var roots []string
	for _, n := range m.trees {
		roots = append(roots, n.Name)
	}
	if got := strings.Join(roots, " "); got != "c. b. a." {
		t.Errorf("trees in order %s, want c. b. a.", got)
	}
	if b := m.trees[1]; b.Members[0].Child == nil || b.Members[0].Child.Ref != "" {
		t.Error("the shared group is not drawn in full under b, the first tree shown that has it")
	}
	var names []string
	for _, c := range m.checks {
		names = append(names, c.Name)
	}
	if got := strings.Join(names, " "); got != "down a-up z-up" {
		t.Errorf("checks in order %s, want down a-up z-up", got)
	}
	d := m.page(pageQuery{Page: 1, Q: "shared"})
	if len(d.Trees) != 2 || d.TreesShown.Of != 2 || len(d.Checks) != 0 || !d.Paged {
		t.Errorf("?q=shared: %d trees (of %d), %d checks, want the two trees holding shared and no check", len(d.Trees), d.TreesShown.Of, len(d.Checks))
	}
}
