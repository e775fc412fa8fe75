package test

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestControlsPartition cuts the leader's control links to the other two (a real
// TCP partition of the raft traffic: every member reaches the others' control
// ports through a proxy per direction, which the test cuts; gossip is left alone,
// since controls do not depend on it), so the majority side must elect a leader:
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
	v, err := f.view(0, "")
	if err != nil {
		t.Fatal(err)
	}
	minority := -1
	for i, m := range f.ms {
		if m.name == v.Raft.Leader {
			minority = i
		}
	}
	if minority < 0 {
		t.Fatalf("no leader known: %+v", v.Raft)
	}
	a, b := (minority+1)%3, (minority+2)%3
	t.Logf("cutting the leader %s from the other two", f.ms[minority].name)

	f.partition(minority, true)
	cut := time.Now()
	var code int
	var body string
	fleetWait(t, 10*time.Second, "the majority side applies east off", func() bool {
		code, body = f.post(a, "/v1/controls/east?reason=partition", "off")
		return code == http.StatusOK
	}, func() string { return body + "\n" + f.diag() })
	t.Logf("the majority applied a change %s after the cut", time.Since(cut).Round(time.Millisecond))
	fleetWait(t, time.Second, "the majority answers the secondary", func() bool { return f.allAnswer(ctlSecondary, a, b) }, f.diag)

	refused := fleetWait(t, 2*time.Second, "the minority refuses changes", func() bool {
		code, body = f.post(minority, "/v1/controls/west", "on") // west is on already: no effect whatever happens to it
		return code == http.StatusServiceUnavailable
	}, f.diag)
	t.Logf("the minority refused %s after the majority's change (%s after the cut): %s", refused.Round(time.Millisecond), time.Since(cut).Round(time.Millisecond), apiErrorText(body))
	if !strings.Contains(body, "needs 2 of the 3 voters") {
		t.Errorf("the minority's refusal %s does not name the quorum", body)
	}
	if got := f.answer(minority); got != ctlPrimary {
		t.Errorf("the minority answers %s during the partition, want the primary (its last state)", got)
	}

	f.partition(minority, false)
	healed := time.Now()
	fleetWait(t, 5*time.Second, "the minority holds the majority's state", func() bool { return f.answer(minority) == ctlSecondary }, f.diag)
	t.Logf("after healing, the minority held the majority's state in %s", time.Since(healed).Round(time.Millisecond))
	fleetWait(t, 10*time.Second, "changes through the former minority apply", func() bool {
		code, body = f.post(minority, "/v1/controls/east", "on")
		return code == http.StatusOK
	}, func() string { return body + "\n" + f.diag() })
	fleetWait(t, time.Second, "every member answers the primary", func() bool { return f.allAnswer(ctlPrimary, 0, 1, 2) }, f.diag)
}
