package operator

import (
	"net/http"
	"time"

	"github.com/healthroute/healthroute/view"
)

// HistoryBlock is a Block that keeps its checks' histories.
type HistoryBlock interface {
	// History returns the history of the check name; ok is false when the block
	// has no such check.
	History(name string) (h view.History, ok bool)
	// Timeline summarises the span before now of check name in n slots; ok is
	// false when it has no history.
	Timeline(name string, now time.Time, span time.Duration, n int) (view.Timeline, bool)
	// RecentChanges returns the n latest status changes of the block's checks,
	// newest first.
	RecentChanges(n int) []view.CheckChange
	// FailOpenHistory returns the times the block's record groups failed open that
	// were not over before from, latest first.
	FailOpenHistory(from time.Time) []view.OpenSpan
}

// getHistory answers GET /v1/checks/NAME/history: the check's status changes,
// oldest first, and its minutes of probes, from the first block in scope that
// defines it.
func (s *server) getHistory(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	for _, b := range s.op.blocksOf(s.scope) {
		hb, ok := b.(HistoryBlock)
		if !ok {
			continue
		}
		if h, ok := hb.History(name); ok {
			writeJSON(w, http.StatusOK, h)
			return
		}
	}
	apiError(w, http.StatusNotFound, "no check named "+name)
}
