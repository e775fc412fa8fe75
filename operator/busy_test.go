package operator

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"testing/synctest"
	"time"
)

// TestBusyAnswers503: a request that finds no turn, over the pace (it would wait
// past paceWait) or with every costly slot taken for expensiveWait, gets 503 with
// Retry-After: 1 and a JSON error, as the README's API limits say. Fake time: the
// gate's wait is real seconds otherwise.
func TestBusyAnswers503(t *testing.T) {
	check := func(t *testing.T, h http.Handler, target string) {
		t.Helper()
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, target, nil))
		var body struct{ Error string }
		if rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") != "1" ||
			json.Unmarshal(rec.Body.Bytes(), &body) != nil || body.Error == "" {
			t.Errorf("GET %s: %d, Retry-After %q, body %q; want 503, Retry-After 1 and an error",
				target, rec.Code, rec.Header().Get("Retry-After"), rec.Body)
		}
	}
	t.Run("pace", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			s := newServer(&Operator{}, "", "")
			// Book the pace for longer than paceWait ahead: the next unit is further off.
			now := time.Now()
			for range (paceWait*paceRate/time.Second)/paceBurst + 2 {
				s.pace.lim.ReserveN(now, paceBurst)
			}
			check(t, s.handler(), "/v1/checks")
		})
	})
	t.Run("costly", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			s := newServer(&Operator{}, "", "")
			for range maxExpensive {
				s.gate <- struct{}{} // every costly slot taken
			}
			start := time.Now()
			check(t, s.handler(), "/v1/explain?name=www.example.org")
			if waited := time.Since(start); waited != expensiveWait {
				t.Errorf("waited %s for a costly slot, want %s", waited, expensiveWait)
			}
		})
	})
}
