package test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// readmeOverrideCommand returns README's override example: the curl line of its
// `~~~ sh` block that POSTs, with its continuation lines joined.
func readmeOverrideCommand(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, blk := range regexp.MustCompile("(?s)~~~ sh\n(.*?)~~~").FindAllSubmatch(b, -1) {
		cmd := strings.ReplaceAll(string(blk[1]), "\\\n", " ")
		for _, line := range strings.Split(cmd, "\n") {
			if strings.HasPrefix(line, "curl ") && strings.Contains(line, "-X POST") {
				return line
			}
		}
	}
	t.Fatal("README.md has no curl -X POST example in a ~~~ sh block")
	return ""
}

// TestReadmeOverrideCurl runs README's override command, word for word but for the
// token file's path and the API's port, against a running CoreDNS: curl's --data
// sends a form content type with a bare word as the body, and the API must take it.
func TestReadmeOverrideCurl(t *testing.T) {
	curl, err := exec.LookPath("curl")
	if err != nil {
		t.Fatal("curl is not installed; run scripts/test-deps and try again")
	}
	line := readmeOverrideCommand(t)
	if !strings.Contains(line, "/etc/coredns/api.token") || !strings.Contains(line, "127.0.0.1:8053") {
		t.Fatalf("README's command no longer names /etc/coredns/api.token and 127.0.0.1:8053: %s", line)
	}
	f := startAPIFixture(t)
	token := writeToken(t, t.TempDir(), apiToken)
	// The fixture's own token file holds the same token; README's path is swapped
	// for one holding it, and README's port for the fixture's.
	line = strings.ReplaceAll(line, "/etc/coredns/api.token", token)
	line = strings.ReplaceAll(line, "127.0.0.1:8053", fmt.Sprintf("127.0.0.1:%d", f.apiPort))
	line = strings.Replace(line, "curl ", curl+" ", 1)

	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "sh", "-c", line)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", line, err, out)
	}
	if !strings.Contains(string(out), `"override": "unhealthy"`) {
		t.Fatalf("%s:\n%s\nwant the override acknowledged", line, out)
	}
	web := apiChecks(t, f.base)["web"]
	if web.Override == nil || *web.Override || web.Healthy {
		t.Errorf("after README's command: web %+v, want forced unhealthy", web)
	}
}
