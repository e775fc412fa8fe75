package test

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestControlsPartition cuts dns-c's control links to the other two (a real TCP
// partition of the raft traffic: every member reaches the others' control ports
// through a proxy per direction, which the test cuts; gossip is left alone, since
// controls do not depend on it):
//   - the majority side (dns-a, dns-b) changes state;
//   - the minority keeps answering from the old state and refuses changes, naming
//     the quorum it lacks;
//   - after healing, every member holds the majority's state within 5 s.
func TestControlsPartition(t *testing.T) {
	if testing.Short() {
		t.Skip("three CoreDNS processes")
	}
	f := newCtlFleet(t, 3, true)
	for i := range f.ms {
		f.start(i)
	}
	f.ready(15*time.Second, 0, 1, 2)

	f.partition(2, true)
	cut := time.Now()
	var code int
	var body string
	fleetWait(t, 10*time.Second, "the majority side applies east off", func() bool {
		code, body = f.post(0, "/v1/controls/east?reason=partition", "off")
		return code == http.StatusOK
	}, func() string { return body + "\n" + f.diag() })
	t.Logf("the majority applied a change %s after the cut", time.Since(cut).Round(time.Millisecond))
	fleetWait(t, time.Second, "the majority answers the secondary", func() bool { return f.allAnswer(ctlSecondary, 0, 1) }, f.diag)

	refused := fleetWait(t, 5*time.Second, "the minority refuses changes", func() bool {
		code, body = f.post(2, "/v1/controls/west", "on") // west is on already: no effect whatever happens to it
		return code == http.StatusServiceUnavailable
	}, f.diag)
	t.Logf("the minority refused %s after the majority's change: %s", refused.Round(time.Millisecond), apiErrorText(body))
	if !strings.Contains(body, "needs 2 of the 3 voters") {
		t.Errorf("the minority's refusal %s does not name the quorum", body)
	}
	if got := f.answer(2); got != ctlPrimary {
		t.Errorf("the minority answers %s during the partition, want the primary (its last state)", got)
	}

	f.partition(2, false)
	healed := time.Now()
	fleetWait(t, 5*time.Second, "the minority holds the majority's state", func() bool { return f.answer(2) == ctlSecondary }, f.diag)
	t.Logf("after healing, the minority held the majority's state in %s", time.Since(healed).Round(time.Millisecond))
	fleetWait(t, 10*time.Second, "changes through the former minority apply", func() bool {
		code, body = f.post(2, "/v1/controls/east", "on")
		return code == http.StatusOK
	}, func() string { return body + "\n" + f.diag() })
	fleetWait(t, time.Second, "every member answers the primary", func() bool { return f.allAnswer(ctlPrimary, 0, 1, 2) }, f.diag)
}
