package test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/healthroute/healthroute/internal/coretest"
)

// chromium runs Debian's chromium headless with args and returns its stdout. It fails
// the test (never skips it) when chromium is missing: scripts/test-deps installs it.
// The browser and every helper process it started are killed by process group.
func chromium(t *testing.T, args ...string) string {
	t.Helper()
	path, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatal("chromium is not installed; run scripts/test-deps (it installs Debian's chromium) and try again")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	base := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--disable-extensions", "--hide-scrollbars", "--user-data-dir=" + t.TempDir()}
	cmd := exec.CommandContext(ctx, path, append(base, args...)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // helpers that outlived the browser
	}
	if err != nil {
		t.Fatalf("chromium %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String()
}

// TestStatusPageBrowser loads the status page of a real server in a real headless
// browser: it shows every record set, then, after endpoints fail, the failed checks
// in their failed state, the last resort and an operator override. With
// UPDATE_SCREENSHOTS=1 it refreshes docs/status-page.png and docs/status-page-phone.png.
func TestStatusPageBrowser(t *testing.T) {
	use1, euw1, api, legacy := newFlipServer(t, false), newFlipServer(t, false), newFlipServer(t, false), newFlipServer(t, false)
	port, apiPort := coretest.FreePort(t), coretest.FreePort(t)
	token := writeToken(t, t.TempDir(), apiToken)
	corefile := fmt.Sprintf(`example.org:%d {
	bind 127.0.0.1
	healthroute {
		api 127.0.0.1:%d {
			token_file %s
		}
		region us-east-1 38.9 -77.0
		region eu-west-1 53.3 -6.3
		%s
		%s
		%s
		%s
		%s
		record www.example.org. latency {
			region us-east-1 alias use1.example.org.
			region eu-west-1 alias euw1.example.org.
		}
		record use1.example.org. weighted {
			weight 10 A 192.0.2.10 check use1-a
			weight 10 A 192.0.2.11 check use1-b
		}
		record euw1.example.org. weighted {
			weight 20 A 198.51.100.10 check euw1-a
			weight 0  A 198.51.100.11
		}
		record api.example.org. failover {
			primary   A 192.0.2.20 check api-primary
			secondary A 198.51.100.20
		}
		record legacy.example.org. simple {
			A 192.0.2.40 check legacy
		}
	}
}
`, port, apiPort, token, fastCheck("use1-a", use1.URL+"/a"), fastCheck("use1-b", use1.URL+"/b"),
		fastCheck("euw1-a", euw1.URL+"/a"), fastCheck("api-primary", api.URL+"/health"), fastCheck("legacy", legacy.URL+"/health"))
	coretest.Start(t, corefile, port, "www.example.org")
	base := fmt.Sprintf("http://127.0.0.1:%d", apiPort)
	checksJSON := func() string { _, b := httpDo(t, http.MethodGet, base+"/v1/checks", "", ""); return b }
	waitUntil(t, 10*time.Second, "every check has a result", func() bool {
		cs := apiChecks(t, base)
		for _, c := range cs {
			if c.Probes == 0 {
				return false
			}
		}
		return len(cs) == 5
	}, checksJSON)

	dom := chromium(t, "--dump-dom", base+"/")
	for _, want := range []string{"<title>healthroute status</title>", `<h1>healthroute status</h1>`,
		`id="record-www.example.org.-A"`, `id="record-use1.example.org.-A"`, `id="record-euw1.example.org.-A"`,
		`id="record-api.example.org.-A"`, `id="record-legacy.example.org.-A"`,
		`<tr id="check-api-primary" class="check is-ok" data-health="healthy"`,
		`<tr id="check-legacy" class="check is-ok" data-health="healthy"`} {
		if !strings.Contains(dom, want) {
			t.Errorf("healthy page lacks %s", want)
		}
	}
	if strings.Contains(dom, `data-health="unhealthy"`) || strings.Contains(dom, `id="failing-open"`) {
		t.Error("healthy page shows something unhealthy")
	}
	if t.Failed() {
		t.Fatalf("page as loaded:\n%s", dom)
	}

	// Endpoints fail; an operator takes euw1-a out by hand.
	use1.ok.Store(false)
	api.ok.Store(false)
	legacy.ok.Store(false)
	waitUntil(t, 10*time.Second, "use1-b, api-primary and legacy unhealthy", func() bool {
		cs := apiChecks(t, base)
		return !cs["use1-b"].Healthy && !cs["api-primary"].Healthy && !cs["legacy"].Healthy && cs["legacy"].LastError != ""
	}, checksJSON)
	use1.ok.Store(true) // use1 comes back; legacy and api-primary stay down
	waitUntil(t, 10*time.Second, "use1 healthy again", func() bool {
		cs := apiChecks(t, base)
		return cs["use1-a"].Healthy && cs["use1-b"].Healthy
	}, checksJSON)
	if code, body := httpDo(t, http.MethodPost, base+"/v1/checks/euw1-a/override", apiToken, "unhealthy"); code != http.StatusOK {
		t.Fatalf("override: %d %s", code, body)
	}

	dom = chromium(t, "--dump-dom", base+"/")
	for _, want := range []string{"<title>3 unhealthy · healthroute status</title>",
		`<tr id="check-api-primary" class="check is-bad" data-health="unhealthy"`,
		`<tr id="check-legacy" class="check is-bad" data-health="unhealthy"`,
		`<tr id="check-use1-a" class="check is-ok" data-health="healthy"`,
		`<tr id="check-euw1-a" class="check is-bad" data-health="unhealthy"`,
		`<span class="badge over">override</span>`,
		`<section class="overrides" id="overrides"`,
		`<section class="alert" id="failing-open"`, `<a href="#record-legacy.example.org.-A">legacy.example.org. A</a>`,
		`<span class="badge resort">last resort: failing open</span>`,
		"status 503 outside 200-399"} {
		if !strings.Contains(dom, want) {
			t.Errorf("page after the failures lacks %s", want)
		}
	}
	if t.Failed() {
		t.Fatalf("page after the failures:\n%s", dom)
	}

	// Screenshots, desktop and phone; the page must render to a real image.
	dir := t.TempDir()
	shots := map[string]string{"status-page.png": "1280,1500", "status-page-phone.png": "390,1400"}
	for name, size := range shots {
		file := filepath.Join(dir, name)
		chromium(t, "--screenshot="+file, "--window-size="+size, base+"/?refresh=5")
		b, err := os.ReadFile(file)
		if err != nil || len(b) < 10_000 || !bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n")) {
			t.Fatalf("screenshot %s: %d bytes, %v", name, len(b), err)
		}
		if os.Getenv("UPDATE_SCREENSHOTS") != "" {
			if err := os.MkdirAll("docs", 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join("docs", name), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
}
