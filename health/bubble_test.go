package health

import (
	"bytes"
	"regexp"
	"runtime"
	"testing"
)

// bubbleHeader finds the synctest bubble in a goroutine's traceback header
// ("goroutine 7 [select (durable), synctest bubble 3]:").
var bubbleHeader = regexp.MustCompile(`(?m)^goroutine \d+ \[[^\]]*synctest bubble (\d+)\]:$`)

// bubbleGoroutines counts the goroutines in the caller's synctest bubble, the
// caller included. runtime.NumGoroutine counts the whole process: a goroutine
// the race detector's runtime or an earlier test starts or ends in between two
// counts (CI saw one) is not the scheduler's.
func bubbleGoroutines(t *testing.T) int {
	t.Helper()
	self := make([]byte, 1<<10)
	m := bubbleHeader.FindSubmatch(self[:runtime.Stack(self, false)])
	if m == nil {
		t.Fatal("bubbleGoroutines called outside a synctest bubble")
	}
	all := make([]byte, 1<<20)
	for {
		n := runtime.Stack(all, true)
		if n < len(all) {
			all = all[:n]
			break
		}
		all = make([]byte, 2*len(all))
	}
	count := 0
	for _, h := range bubbleHeader.FindAllSubmatch(all, -1) {
		if bytes.Equal(h[1], m[1]) {
			count++
		}
	}
	return count
}
