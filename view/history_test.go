package view

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestHistoryJSONShowsDroppedChangesAtZero: the check-history JSON carries
// dropped_changes even when nothing was dropped, as docs/observability.md shows it.
func TestHistoryJSONShowsDroppedChangesAtZero(t *testing.T) {
	b, err := json.Marshal(History{Check: "web", Changes: []Change{}, Minutes: []Minute{}})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"dropped_changes":0`) {
		t.Errorf("history JSON %s has no dropped_changes at 0", b)
	}
}
