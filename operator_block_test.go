package healthroute

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestExplainRefusesZoneTransfers: a DNS query for AXFR or IXFR never gets an answer
// from the block (it goes to the next plugin, else REFUSED), so explain must not
// describe one: it refuses the type, naming why.
func TestExplainRefusesZoneTransfers(t *testing.T) {
	op, _ := statusServer(t, explainBlock)
	api := op.Handler("")
	for _, typ := range []string{"AXFR", "ixfr"} {
		rec := httptest.NewRecorder()
		api.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/v1/explain?name=www.example.org&type="+typ, nil))
		if rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), "next plugin") {
			t.Errorf("type %s: %d %s, want 400 saying it goes to the next plugin", typ, rec.Code, rec.Body)
		}
	}
	rec := httptest.NewRecorder()
	api.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/v1/explain?name=www.example.org&type=A", nil))
	if rec.Code != http.StatusOK {
		t.Errorf("type A: %d %s, want 200", rec.Code, rec.Body)
	}
}
