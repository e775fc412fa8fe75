package healthroute

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestOverrideBodies: the override state may come as a text/plain body, as curl
// --data sends it (a bare word with a form content type), as the form field state,
// or in the query; each reaches the block's routing.
func TestOverrideBodies(t *testing.T) {
	op, h := statusServer(t, explainBlock)
	token := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(token, []byte("0123456789abcdef0123\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	api := op.Handler(token)
	healthy := func() bool {
		for _, c := range h.Checks() {
			if c.Name == "c1" {
				return c.Healthy
			}
		}
		t.Fatal("no check c1")
		return false
	}
	for _, tc := range []struct {
		name, ctype, query, body string
		code                     int
		healthy                  bool
	}{
		{"text/plain", "text/plain", "", "unhealthy\n", 200, false},
		{"curl --data", "application/x-www-form-urlencoded", "", "healthy", 200, true},
		{"form field", "application/x-www-form-urlencoded", "", "state=unhealthy", 200, false},
		{"query", "", "?state=none", "", 200, true},
		{"other state", "text/plain", "", "sick", 400, true},
		{"form, other state", "application/x-www-form-urlencoded", "", "state=sick", 400, true},
		{"too long", "text/plain", "", strings.Repeat("x", 2000), 400, true},
	} {
		req := httptest.NewRequest(http.MethodPost, "/v1/checks/c1/override"+tc.query, strings.NewReader(tc.body))
		req.Header.Set("Authorization", "Bearer 0123456789abcdef0123")
		if tc.ctype != "" {
			req.Header.Set("Content-Type", tc.ctype)
		}
		rec := httptest.NewRecorder()
		api.ServeHTTP(rec, req)
		if rec.Code != tc.code {
			t.Errorf("%s: %d %s, want %d", tc.name, rec.Code, rec.Body, tc.code)
		}
		if got := healthy(); got != tc.healthy {
			t.Errorf("%s: c1 healthy=%t, want %t", tc.name, got, tc.healthy)
		}
	}
}

// TestOverrideAuthScheme: the authorization scheme is case-insensitive (RFC 7235
// section 2.1), so "bearer" and "BEARER" carry the token as "Bearer" does; another
// scheme, a missing token or a wrong one gets 401 and changes nothing.
func TestOverrideAuthScheme(t *testing.T) {
	op, _ := statusServer(t, explainBlock)
	token := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(token, []byte("0123456789abcdef0123\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	api := op.Handler(token)
	for _, tc := range []struct {
		auth string
		code int
	}{
		{"Bearer 0123456789abcdef0123", 200},
		{"bearer 0123456789abcdef0123", 200},
		{"BEARER 0123456789abcdef0123", 200},
		{"Basic 0123456789abcdef0123", 401},
		{"Bearer", 401},
		{"Bearer 0123456789abcdef0124", 401},
		{"0123456789abcdef0123", 401},
	} {
		req := httptest.NewRequest(http.MethodPost, "/v1/checks/c1/override", strings.NewReader("none"))
		req.Header.Set("Authorization", tc.auth)
		req.Header.Set("Content-Type", "text/plain")
		rec := httptest.NewRecorder()
		api.ServeHTTP(rec, req)
		if rec.Code != tc.code {
			t.Errorf("Authorization %q: %d %s, want %d", tc.auth, rec.Code, rec.Body, tc.code)
		}
	}
}
