package coretest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	dto "github.com/prometheus/client_model/go"
)

// MetricPrefix starts the name of every metric healthroute exports.
const MetricPrefix = "coredns_healthroute_"

// WaitUntil polls cond every 50 ms until it holds, failing the test after within.
// detail says what was seen last, for the failure message.
func WaitUntil(t testing.TB, within time.Duration, what string, cond func() bool, detail func() string) {
	t.Helper()
	deadline := time.Now().Add(within)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s\n%s", what, within, detail())
		}
		<-tick.C
	}
}

// LintFamilies lints the healthroute families of fams with promlint and fails the
// test on any problem, or when there is no healthroute family to lint.
func LintFamilies(t testing.TB, fams []*dto.MetricFamily) {
	t.Helper()
	var ours []*dto.MetricFamily
	for _, mf := range fams {
		if strings.HasPrefix(mf.GetName(), MetricPrefix) {
			ours = append(ours, mf)
		}
	}
	if len(ours) == 0 {
		t.Fatal("no " + MetricPrefix + " families to lint")
	}
	problems, err := promlint.NewWithMetricFamilies(ours).Lint()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("promlint: %s: %s", p.Metric, p.Text)
	}
}

// WriteFile writes content to a file named name in a fresh temporary directory and
// returns its path.
func WriteFile(t testing.TB, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}
