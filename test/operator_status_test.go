package test

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/healthroute/healthroute/internal/coretest"
)

// operatorManyChecks is a Corefile of n checks, each the check of its own record
// nNNNNN.example.org.: disabled, so never probed (a large configuration costs the
// page, not the prober); every 1000th also inverted, so it is unhealthy and its
// record fails open. The API is on apiPort with token_file.
func operatorManyChecks(port, apiPort, n int, tokenFile string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "example.org:%d {\n\tbind 127.0.0.1\n\thealthroute {\n\t\tapi 127.0.0.1:%d {\n\t\t\ttoken_file %s\n\t\t}\n", port, apiPort, tokenFile)
	for i := range n {
		opts := "disabled"
		if i%1000 == 999 {
			opts = "disabled\n\t\t\tinvert"
		}
		fmt.Fprintf(&b, "\t\tcheck c%05d http http://192.0.2.1/%d {\n\t\t\t%s\n\t\t}\n", i, i, opts)
		fmt.Fprintf(&b, "\t\trecord n%05d.example.org. simple {\n\t\t\tA 192.0.2.1 check c%05d\n\t\t}\n", i, i)
	}
	b.WriteString("\t}\n}\n")
	return b.String()
}

// operatorGet sends GET url with If-None-Match etag ("" for none) and returns the
// status, the ETag and the body.
func operatorGet(t *testing.T, url, etag string) (int, string, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if etag != "" {
		req.Header.Set("If-None-Match", etag)
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	return resp.StatusCode, resp.Header.Get("ETag"), string(body)
}

// TestOperatorStatusPageLarge: with 10,000 checks the status page is one small page,
// the ten unhealthy checks and the ten records failing open first, with the whole
// configuration's counts; ?page= and ?q= reach the rest. A refresh with the page's
// ETag gets 304 until the state changes (an override), and so do the JSON views.
func TestOperatorStatusPageLarge(t *testing.T) {
	port, apiPort := coretest.FreePort(t), coretest.FreePort(t)
	token := writeToken(t, t.TempDir(), apiToken)
	srv := coretest.Start(t, operatorManyChecks(port, apiPort, 10_000, token), port, "n00000.example.org")
	base := fmt.Sprintf("http://127.0.0.1:%d", apiPort)

	code, etag, page := operatorGet(t, base+"/", "")
	if code != http.StatusOK || etag == "" {
		t.Fatalf("GET /: %d, ETag %q", code, etag)
	}
	if len(page) > 300_000 {
		t.Errorf("GET / with 10,000 checks: %d bytes, want a page of at most 300 kB", len(page))
	}
	for _, want := range []string{
		"<title>10 unhealthy · healthroute status</title>",
		"<li><strong>10000</strong> checks</li>", "<li class=\"bad\"><strong>10</strong> unhealthy</li>",
		"<li class=\"resort\"><strong>10</strong> failing open</li>",
		"Checks 1-50 of 10000", "Record trees 1-50 of 10000",
		`<tr id="check-c00999" class="check is-bad"`, `<tr id="check-c09999" class="check is-bad"`,
		`<article class="tree" id="record-n00999.example.org.-A"`,
		`<a rel="next" href="?page=2">Next page</a>`, `<input id="q" name="q" type="search"`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("first page lacks %s", want)
		}
	}
	if n := strings.Count(page, `<tr id="check-`); n != 50 {
		t.Errorf("first page: %d check rows, want 50", n)
	}
	// Unhealthy first: the ten bad rows come before any good one.
	if i, j := strings.Index(page, `class="check is-ok"`), strings.LastIndex(page, `class="check is-bad"`); i < j {
		t.Error("a healthy check is listed before an unhealthy one")
	}

	_, _, page2 := operatorGet(t, base+"/?page=2", "")
	for _, want := range []string{"Checks 51-100 of 10000", `<a rel="prev" href="?">Previous page</a>`, `<a rel="next" href="?page=3">`} {
		if !strings.Contains(page2, want) {
			t.Errorf("page 2 lacks %s", want)
		}
	}
	if strings.Contains(page2, `id="check-c00999"`) {
		t.Error("page 2 repeats an unhealthy check of page 1")
	}
	_, _, last := operatorGet(t, base+"/?page=200", "")
	if !strings.Contains(last, "Checks 9951-10000 of 10000") || strings.Contains(last, `rel="next"`) {
		t.Errorf("page 200 is not the last one:\n%.2000s", last)
	}

	_, _, found := operatorGet(t, base+"/?q=C04242", "")
	if !strings.Contains(found, `<tr id="check-c04242"`) || !strings.Contains(found, "Checks 1-1 of 1 matching") ||
		!strings.Contains(found, `id="record-n04242.example.org.-A"`) || !strings.Contains(found, "Record trees 1-1 of 1 matching") {
		t.Errorf("?q=C04242 does not find c04242 and its record:\n%.3000s", found)
	}
	_, _, byTarget := operatorGet(t, base+"/?q=192.0.2.1/777", "")
	if !strings.Contains(byTarget, `<tr id="check-c00777"`) {
		t.Error("?q= does not search check targets")
	}
	// A browser shows the search's result, the form keeping the query.
	dom := chromium(t, "--dump-dom", base+"/?q=c04242")
	for _, want := range []string{`<tr id="check-c04242" class="check is-ok"`, `value="c04242"`, "Checks 1-1 of 1 matching"} {
		if !strings.Contains(dom, want) {
			t.Errorf("the search in a browser lacks %s", want)
		}
	}
	if code, _, _ := operatorGet(t, base+"/?page=0", ""); code != http.StatusBadRequest {
		t.Errorf("?page=0: %d, want 400", code)
	}

	// Refreshes: 304 while nothing changed, for the page and the JSON views alike.
	if code, tag, body := operatorGet(t, base+"/", etag); code != http.StatusNotModified || tag != etag || body != "" {
		t.Errorf("refresh with If-None-Match: %d %q %d bytes, want 304", code, tag, len(body))
	}
	code, jtag, _ := operatorGet(t, base+"/v1/checks", "")
	if code != http.StatusOK || jtag == "" {
		t.Fatalf("GET /v1/checks: %d, ETag %q", code, jtag)
	}
	if code, _, _ := operatorGet(t, base+"/v1/checks", jtag); code != http.StatusNotModified {
		t.Errorf("/v1/checks with If-None-Match: %d, want 304", code)
	}
	// An override changes the state: the same tag now gets the new page.
	if code, body := httpDo(t, http.MethodPost, base+"/v1/checks/c00005/override", apiToken, "unhealthy"); code != http.StatusOK {
		t.Fatalf("override: %d %s", code, body)
	}
	code, tag, page := operatorGet(t, base+"/", etag)
	if code != http.StatusOK || tag == etag || !strings.Contains(page, `<tr id="check-c00005" class="check is-bad"`) ||
		!strings.Contains(page, "<li class=\"over\"><strong>1</strong> overridden</li>") {
		t.Errorf("after an override, refresh with the old tag: %d %q, want 200 with c00005 overridden", code, tag)
	}
	if m := srv.Query(t, "n00005.example.org", dns.TypeA); len(m.Answer) != 1 {
		t.Errorf("n00005 after the override: %v, want its only record (failing open)", m)
	}
}

// TestOperatorStatusPageSmall: a configuration that fits one page shows no paging,
// and the page's ETag still saves refreshes.
func TestOperatorStatusPageSmall(t *testing.T) {
	port, apiPort := coretest.FreePort(t), coretest.FreePort(t)
	token := writeToken(t, t.TempDir(), apiToken)
	coretest.Start(t, operatorManyChecks(port, apiPort, 3, token), port, "n00000.example.org")
	base := fmt.Sprintf("http://127.0.0.1:%d", apiPort)
	code, etag, page := operatorGet(t, base+"/", "")
	if code != http.StatusOK || !strings.Contains(page, `<tr id="check-c00002"`) {
		t.Fatalf("GET /: %d\n%s", code, page)
	}
	for _, no := range []string{`rel="next"`, `type="search"`, "Checks 1-"} {
		if strings.Contains(page, no) {
			t.Errorf("a three-check page has %s", no)
		}
	}
	waitUntil(t, 5*time.Second, "304 on a refresh", func() bool {
		code, _, _ := operatorGet(t, base+"/", etag)
		return code == http.StatusNotModified
	}, func() string { return "" })
}
