package test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/healthroute/healthroute/internal/coretest"
	"github.com/healthroute/healthroute/view"
)

// metricPrefix starts every healthroute metric family name.
const metricPrefix = coretest.MetricPrefix

// httpClient talks to the servers the tests start, on loopback only.
var httpClient = &http.Client{Timeout: 5 * time.Second}

// waitUntil polls a condition until it holds or the test fails (coretest.WaitUntil).
var waitUntil = coretest.WaitUntil

// httpDo sends one request and returns the status and body.
func httpDo(t *testing.T, method, url, token, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		t.Fatalf("%s %s: reading the body: %v", method, url, err)
	}
	return resp.StatusCode, string(b)
}

// getJSON fetches url and decodes its JSON body into v.
func getJSON(t *testing.T, url string, v any) string {
	t.Helper()
	code, body := httpDo(t, http.MethodGet, url, "", "")
	if code != http.StatusOK {
		t.Fatalf("GET %s: %d %s", url, code, body)
	}
	if err := json.Unmarshal([]byte(body), v); err != nil {
		t.Fatalf("GET %s: %v\n%s", url, err, body)
	}
	return body
}

// apiChecks returns /v1/checks by check name.
func apiChecks(t *testing.T, base string) map[string]view.Check {
	t.Helper()
	var v struct{ Checks []view.Check }
	getJSON(t, base+"/v1/checks", &v)
	out := map[string]view.Check{}
	for _, c := range v.Checks {
		out[c.Name] = c
	}
	return out
}

// fastCheck is a Corefile http check on url that probes every 100ms and changes state
// on a single result.
func fastCheck(name, url string) string {
	return fmt.Sprintf("check %s http %s {\n\t\t\tinterval 100ms\n\t\t\tfailure_threshold 1\n\t\t}", name, url)
}

// writeToken writes a bearer token file into dir and returns its path.
func writeToken(t *testing.T, dir, token string) string {
	t.Helper()
	path := filepath.Join(dir, "api.token")
	if err := os.WriteFile(path, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// scrape reads the metrics endpoint at url.
func scrape(t *testing.T, url string) (map[string]*dto.MetricFamily, string) {
	t.Helper()
	code, body := httpDo(t, http.MethodGet, url, "", "")
	if code != http.StatusOK {
		t.Fatalf("GET %s: %d", url, code)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatalf("parsing %s: %v", url, err)
	}
	return fams, body
}

// metricValue sums the samples of family name whose labels include want (counters,
// gauges; for histograms the sample count).
func metricValue(fams map[string]*dto.MetricFamily, name string, want map[string]string) float64 {
	mf := fams[name]
	if mf == nil {
		return 0
	}
	sum := 0.0
	for _, m := range mf.GetMetric() {
		if !hasLabels(m, want) {
			continue
		}
		switch {
		case m.Counter != nil:
			sum += m.GetCounter().GetValue()
		case m.Gauge != nil:
			sum += m.GetGauge().GetValue()
		case m.Histogram != nil:
			sum += float64(m.GetHistogram().GetSampleCount())
		}
	}
	return sum
}

// hasLabels reports whether m's labels include every name/value pair of want.
func hasLabels(m *dto.Metric, want map[string]string) bool {
	for k, v := range want {
		found := false
		for _, l := range m.GetLabel() {
			found = found || (l.GetName() == k && l.GetValue() == v)
		}
		if !found {
			return false
		}
	}
	return true
}

// labelPairs turns name/value pairs into a map (an odd last name is dropped).
func labelPairs(labels ...string) map[string]string {
	want := map[string]string{}
	for i := 0; i+1 < len(labels); i += 2 {
		want[labels[i]] = labels[i+1]
	}
	return want
}

// series lists the samples of family name, for failure messages.
func series(fams map[string]*dto.MetricFamily, name string) string {
	mf := fams[name]
	if mf == nil {
		return name + ": absent"
	}
	var b strings.Builder
	for _, m := range mf.GetMetric() {
		fmt.Fprintf(&b, "%s %v\n", name, m)
	}
	return b.String()
}

// lintFamilies lints the healthroute metric families (coretest.LintFamilies).
var lintFamilies = coretest.LintFamilies
