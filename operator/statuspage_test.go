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
