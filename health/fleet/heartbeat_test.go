package fleet

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestHeartbeatsMissedCounted: the beats a member sent that never arrived are
// counted from the gaps between the send times of those that did (rounded to whole
// beats); a beat relayed twice, or arriving late behind a newer one, counts none;
// a member's first beat, and its first after a restart, count none.
func TestHeartbeatsMissedCounted(t *testing.T) {
	f, err := New(Config{Name: "self", Insecure: true, Quorum: DefaultQuorum})
	if err != nil {
		t.Fatal(err)
	}
	missed := func() float64 { return testutil.ToFloat64(heartbeatsMissed.WithLabelValues("p")) }
	t.Cleanup(func() { forgetMember("p") })
	forgetMember("p")
	start := time.Unix(1000, 0)
	beat := func(epoch uint64, at time.Duration) {
		h := header{typ: msgBeat, name: "p", epoch: epoch, seq: 1, sentAt: ms(start.Add(at))}
		f.handle(beatOf(h, 0), false)
	}
	for _, step := range []struct {
		epoch uint64
		at    time.Duration
		want  float64
		what  string
	}{
		{1, 0, 0, "the first beat"},
		{1, time.Second, 0, "the next beat, on time"},
		{1, time.Second, 0, "the same beat relayed"},
		{1, 2300 * time.Millisecond, 0, "a beat 1.3 s after the last"},
		{1, 5300 * time.Millisecond, 2, "a beat 3 s after the last: 2 lost between"},
		{1, 4300 * time.Millisecond, 2, "an older beat arriving late"},
		{1, 7700 * time.Millisecond, 3, "2.4 s after the last: 1 lost"},
		{2, 20 * time.Second, 3, "the first beat after a restart"},
		{2, 21 * time.Second, 3, "the restarted member's next beat"},
	} {
		beat(step.epoch, step.at)
		if got := missed(); got != step.want {
			t.Fatalf("after %s: %v missed, want %v", step.what, got, step.want)
		}
	}
}
