package test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestAlertingRules checks the repository's alerting rules with promtool and runs
// their unit tests (deploy/prometheus/healthroute.rules.test.yml): each alert fires
// at its shipped `for` duration on simulated series, and not before, and resolves.
func TestAlertingRules(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Fatalf("promtool is not installed (scripts/test-deps installs the prometheus package): %v", err)
	}
	for _, args := range [][]string{
		{"check", "rules", "healthroute.rules.yml"},
		{"test", "rules", "healthroute.rules.test.yml"},
	} {
		cmd := exec.Command(promtool, args...)
		cmd.Dir = "../deploy/prometheus"
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		if !strings.Contains(string(out), "SUCCESS") {
			t.Fatalf("promtool %s did not report SUCCESS:\n%s", strings.Join(args, " "), out)
		}
	}
}
