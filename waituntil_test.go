package healthroute

import (
	"testing"
	"time"
)

// waitUntil polls cond every 50 ms until it holds, failing the test after within.
// detail says what was seen last, for the failure message.
func waitUntil(t *testing.T, within time.Duration, what string, cond func() bool, detail func() string) {
	t.Helper()
	deadline := time.Now().Add(within)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s\n%s", what, within, detail())
		}
		<-tick.C
	}
}
