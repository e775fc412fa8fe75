package test

import (
	"bytes"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/healthroute/healthroute/internal/coretest"
)

// TestStatusPageHistoryBrowser loads the status page of a real server in a real
// headless browser after a check flapped: the recent changes are listed at the top,
// newest first, with their reasons, and each probed check has a status timeline and
// a latency sparkline drawn as inline SVG (the page has no script). With
// UPDATE_SCREENSHOTS=1 it writes docs/status-page-history.png and
// docs/status-page-history-phone.png.
func TestStatusPageHistoryBrowser(t *testing.T) {
	web, steady := newFlipServer(t, false), newFlipServer(t, true)
	port, apiPort := coretest.FreePort(t), coretest.FreePort(t)
	corefile := fmt.Sprintf(`example.org:%d {
	bind 127.0.0.1
	healthroute {
		api 127.0.0.1:%d
		%s
		check steady https %s/ {
			interval 100ms
			failure_threshold 1
		}
		record www.example.org. failover {
			primary   A 192.0.2.10 check web id east
			secondary A 198.51.100.10 check steady id west
		}
		record solo.example.org. weighted {
			weight 10 A 192.0.2.20 check web id solo-a
		}
	}
}
`, port, apiPort, fastCheck("web", web.URL+"/"), steady.URL)
	coretest.Start(t, corefile, port, "www.example.org")
	base := fmt.Sprintf("http://127.0.0.1:%d", apiPort)
	checksJSON := func() string { _, b := httpDo(t, http.MethodGet, base+"/v1/checks", "", ""); return b }
	waitUntil(t, 10*time.Second, "both checks probed", func() bool {
		cs := apiChecks(t, base)
		return cs["web"].Probes > 0 && cs["steady"].Probes > 0
	}, checksJSON)
	for i := range 7 { // ends unhealthy: solo fails open
		web.ok.Store(i%2 == 1)
		want := i%2 == 1
		waitUntil(t, 10*time.Second, fmt.Sprintf("web healthy=%v", want), func() bool { return apiChecks(t, base)["web"].Healthy == want }, checksJSON)
	}
	waitUntil(t, 10*time.Second, "7 changes of web in its history", func() bool {
		_, b := httpDo(t, http.MethodGet, base+"/v1/checks/web/history", "", "")
		return strings.Count(b, `"reason"`) == 7
	}, checksJSON)

	dom := chromium(t, "--dump-dom", base+"/?refresh=0")
	for _, want := range []string{`<section class="recent" id="recent"`, `<h2 id="recent-h">Recent changes</h2>`,
		`<svg class="timeline"`, `aria-label="last 24 hours: 7 status changes`, `aria-label="last 24 hours: 0 status changes`,
		`<svg class="spark"`, `<polyline points="`, "status 503 outside 200-399", `class="to-unhealthy">healthy → unhealthy</span>`,
		`<span class="badge resort">last resort: failing open</span>`} {
		if !strings.Contains(dom, want) {
			t.Errorf("the page lacks %s", want)
		}
	}
	if strings.Contains(dom, "<script") {
		t.Error("the page has a script")
	}
	recent := dom[strings.Index(dom, `<section class="recent"`):]
	recent = recent[:strings.Index(recent, "</section>")]
	if n := strings.Count(recent, "<li>"); n != 7 {
		t.Errorf("%d recent changes listed, want web's 7", n)
	}
	if first := strings.Index(recent, "<li>"); first < 0 || !strings.Contains(recent[first:first+400], "healthy → unhealthy") {
		t.Errorf("the newest change listed first is not web's last failure:\n%s", recent)
	}
	// solo.example.org. A failed open at each of web's 4 failures, the last until now.
	if i := strings.Index(dom, `<section class="recent" id="failed-open"`); i < 0 {
		t.Error("the page has no times failing open")
	} else {
		sec := dom[i:]
		sec = sec[:strings.Index(sec, "</section>")]
		if n := strings.Count(sec, `<a href="#record-solo.example.org.-A">solo.example.org. A</a> (weighted)`); n != 4 {
			t.Errorf("solo.example.org. A listed failing open %d times, want 4:\n%s", n, sec)
		}
		if n := strings.Count(sec, "until now"); n != 1 {
			t.Errorf("%d times failing open until now, want 1 (the latest)", n)
		}
	}
	if t.Failed() {
		t.Fatalf("page:\n%s", dom)
	}

	screenshots(t, base+"/?refresh=0", map[string]string{"status-page-history.png": "1280,1300", "status-page-history-phone.png": "390,2300"})
}

// screenshots takes a screenshot of url in chromium for each file name and window
// size of shots; each must be a real image. With UPDATE_SCREENSHOTS=1 they are
// written into docs/.
func screenshots(t *testing.T, url string, shots map[string]string) {
	t.Helper()
	dir := t.TempDir()
	for name, size := range shots {
		file := filepath.Join(dir, name)
		chromium(t, "--screenshot="+file, "--window-size="+size, url)
		b, err := os.ReadFile(file)
		if err != nil || len(b) < 10_000 || !bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n")) {
			t.Fatalf("screenshot %s: %d bytes, %v", name, len(b), err)
		}
		if os.Getenv("UPDATE_SCREENSHOTS") != "" {
			if err := os.WriteFile(filepath.Join("..", "docs", name), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
}
