package test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"testing"
	"time"
)

// startDaemon runs a long-running binary (Prometheus, Alertmanager) in dir and waits
// (up to 30 s) until GET ready answers 200; the process is stopped by PID when the
// test ends. Its output is kept for failure messages.
func startDaemon(t *testing.T, dir, ready, bin string, args ...string) *zonesProc {
	t.Helper()
	ok := func() bool {
		resp, err := httpClient.Get(ready)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}
	return startProc(t, dir, bin, "ready at "+ready, 30*time.Second, 100*time.Millisecond, ok, args...)
}

// promResult is one series of a Prometheus instant query's result.
type promResult struct {
	Metric map[string]string `json:"metric"`
	Value  [2]any            `json:"value"`
}

// promQuery runs an instant query against the Prometheus at base and returns its
// vector result; a query Prometheus refuses is an error.
func promQuery(base, expr string) ([]promResult, error) {
	resp, err := httpClient.Get(base + "/api/v1/query?query=" + url.QueryEscape(expr))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var body struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			ResultType string       `json:"resultType"`
			Result     []promResult `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return nil, err
	}
	if body.Status != "success" {
		return nil, fmt.Errorf("%s: %s", expr, body.Error)
	}
	return body.Data.Result, nil
}

// amAlert is one alert as Alertmanager's API lists it.
type amAlert struct {
	Labels   map[string]string `json:"labels"`
	StartsAt time.Time         `json:"startsAt"`
	EndsAt   time.Time         `json:"endsAt"`
	Status   struct {
		State string `json:"state"`
	} `json:"status"`
}

// amActive returns the active alerts of the Alertmanager at base named name whose
// labels include want.
func amActive(t *testing.T, base, name string, want map[string]string) []amAlert {
	t.Helper()
	var all []amAlert
	getJSON(t, base+"/api/v2/alerts?active=true&silenced=false&inhibited=false", &all)
	var out []amAlert
	now := time.Now()
outer:
	for _, a := range all {
		if a.Labels["alertname"] != name || a.Status.State != "active" || (!a.EndsAt.IsZero() && a.EndsAt.Before(now)) {
			continue
		}
		for k, v := range want {
			if a.Labels[k] != v {
				continue outer
			}
		}
		out = append(out, a)
	}
	return out
}
