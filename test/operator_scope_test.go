package test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/miekg/dns"

	"github.com/healthroute/healthroute/internal/coretest"
)

// TestOperatorTokenScope runs two server blocks, each with its own API: a.example's
// with a token, b.example's without. Both define a check named shared (each its own
// endpoint) and one of their own. a.example's token overrides only a.example's
// checks: b.example's check is unknown to it, and overriding shared fails a.example
// over but leaves b.example's answers alone. Each API shows only its own block.
func TestOperatorTokenScope(t *testing.T) {
	webA, webB, onlyB := newFlipServer(t, false), newFlipServer(t, false), newFlipServer(t, false)
	port, apiA, apiB := coretest.FreePort(t), coretest.FreePort(t), coretest.FreePort(t)
	token := writeToken(t, t.TempDir(), apiToken)
	corefile := fmt.Sprintf(`a.example:%d {
	bind 127.0.0.1
	healthroute {
		api 127.0.0.1:%d {
			token_file %s
		}
		%s
		record www.a.example. failover {
			primary   A 192.0.2.1 check shared
			secondary A 198.51.100.1
		}
	}
}
b.example:%d {
	bind 127.0.0.1
	healthroute {
		api 127.0.0.1:%d
		%s
		%s
		record www.b.example. failover {
			primary   A 192.0.2.2 check shared
			secondary A 198.51.100.2
		}
		record only.b.example. failover {
			primary   A 192.0.2.3 check only-b
			secondary A 198.51.100.3
		}
	}
}
`, port, apiA, token, fastCheck("shared", webA.URL+"/a"), port, apiB, fastCheck("shared", webB.URL+"/b"), fastCheck("only-b", onlyB.URL+"/b"))
	srv := coretest.Start(t, corefile, port, "www.a.example")
	baseA, baseB := fmt.Sprintf("http://127.0.0.1:%d", apiA), fmt.Sprintf("http://127.0.0.1:%d", apiB)
	answers := func() (a, b, only string) {
		return firstA(srv.Query(t, "www.a.example", dns.TypeA)), firstA(srv.Query(t, "www.b.example", dns.TypeA)),
			firstA(srv.Query(t, "only.b.example", dns.TypeA))
	}
	if a, b, only := answers(); a != "192.0.2.1" || b != "192.0.2.2" || only != "192.0.2.3" {
		t.Fatalf("answers %s %s %s, want every primary", a, b, only)
	}

	// Each API shows its own block only.
	checksA, checksB := apiChecks(t, baseA), apiChecks(t, baseB)
	if len(checksA) != 1 || checksA["shared"].Target != webA.URL+"/a" {
		t.Errorf("a.example's API shows checks %v, want its shared only", checksA)
	}
	if len(checksB) != 2 || checksB["shared"].Target != webB.URL+"/b" {
		t.Errorf("b.example's API shows checks %v, want its shared and only-b", checksB)
	}
	_, recsA := httpDo(t, http.MethodGet, baseA+"/v1/records", "", "")
	_, pageA := httpDo(t, http.MethodGet, baseA+"/", "", "")
	for what, body := range map[string]string{"/v1/records": recsA, "the status page": pageA} {
		if strings.Contains(body, "b.example") || !strings.Contains(body, "www.a.example.") {
			t.Errorf("a.example's API, %s: shows b.example or lacks a.example:\n%s", what, body)
		}
	}
	if code, _ := httpDo(t, http.MethodGet, baseA+"/v1/explain?name=www.b.example", "", ""); code != http.StatusNotFound {
		t.Errorf("a.example's API explains www.b.example: %d, want 404", code)
	}

	// a.example's token cannot touch b.example's check; b.example's API takes no token.
	if code, body := httpDo(t, http.MethodPost, baseA+"/v1/checks/only-b/override", apiToken, "unhealthy"); code != http.StatusNotFound {
		t.Errorf("a.example's token overriding b.example's only-b: %d %s, want 404", code, body)
	}
	if code, body := httpDo(t, http.MethodPost, baseB+"/v1/checks/only-b/override", apiToken, "unhealthy"); code != http.StatusForbidden {
		t.Errorf("b.example's API (no token_file) overriding only-b: %d %s, want 403", code, body)
	}
	if a, b, only := answers(); a != "192.0.2.1" || b != "192.0.2.2" || only != "192.0.2.3" {
		t.Errorf("after refused overrides: answers %s %s %s, want every primary", a, b, only)
	}

	// Overriding shared through a.example's API fails a.example over, not b.example.
	if code, body := httpDo(t, http.MethodPost, baseA+"/v1/checks/shared/override", apiToken, "unhealthy"); code != http.StatusOK {
		t.Fatalf("a.example's token overriding its shared: %d %s", code, body)
	}
	if a, b, only := answers(); a != "198.51.100.1" || b != "192.0.2.2" || only != "192.0.2.3" {
		t.Errorf("after overriding a.example's shared: answers %s %s %s, want a.example's secondary and b.example's primaries", a, b, only)
	}
	if c := apiChecks(t, baseB)["shared"]; c.Override != nil || !c.Healthy {
		t.Errorf("b.example's shared after a.example's override: %+v, want no override", c)
	}
	if c := apiChecks(t, baseA)["shared"]; c.Override == nil || c.Healthy {
		t.Errorf("a.example's shared after its override: %+v, want overridden unhealthy", c)
	}
}
