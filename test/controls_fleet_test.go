package test

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestControlsFleetDurableAndQuorum runs three CoreDNS processes with a shared key
// and routing controls at the default raft timers:
//   - east turned off through dns-a changes the answer of all three within 1 s;
//   - after SIGKILL of all three and a restart, each answers from the same state
//     from its first query on;
//   - after SIGKILL of two, the survivor keeps answering from that state and
//     refuses changes within 2 s, with an error naming the quorum it lacks;
//   - once they are restarted, changes work again.
func TestControlsFleetDurableAndQuorum(t *testing.T) {
	if testing.Short() {
		t.Skip("three CoreDNS processes")
	}
	f := newCtlFleet(t, 3, false)
	for i := range f.ms {
		f.start(i)
	}
	f.ready(15*time.Second, 0, 1, 2)
	if !f.allAnswer(ctlPrimary, 0, 1, 2) {
		t.Fatalf("before any change, a member does not answer the primary\n%s", f.diag())
	}

	sent := time.Now()
	if code, body := f.post(0, "/v1/controls/east?reason=drain+east", "off"); code != http.StatusOK {
		t.Fatalf("east off through dns-a: %d %s", code, body)
	}
	fleetWait(t, 1*time.Second, "every member answers the secondary", func() bool { return f.allAnswer(ctlSecondary, 0, 1, 2) }, f.diag)
	took := time.Since(sent)
	t.Logf("east off through dns-a: every member answers the secondary %s after the request was sent", took.Round(time.Millisecond))
	if took > time.Second {
		t.Errorf("every member answered the secondary %s after the request, want within 1s", took)
	}

	for i := range f.ms {
		f.kill(i)
	}
	for i := range f.ms {
		f.start(i)
		if got := f.answer(i); got != ctlSecondary {
			t.Fatalf("%s after a restart of all three answers %s at once, want the secondary (east still off)", f.ms[i].name, got)
		}
	}
	f.ready(15*time.Second, 0, 1, 2)
	for i := range f.ms {
		if v, err := f.view(i, ""); err != nil || v.on("east") || !v.on("west") {
			t.Fatalf("%s after the restart: %+v %v, want east off, west on", f.ms[i].name, v, err)
		}
	}

	f.kill(1)
	f.kill(2)
	var body string
	refusedIn := fleetWait(t, 2*time.Second, "the survivor refuses changes", func() bool {
		var code int
		// Setting east to the state it has: whatever becomes of this entry, the state stays.
		code, body = f.post(0, "/v1/controls/east", "off")
		if got := f.answer(0); got != ctlSecondary {
			t.Fatalf("the survivor answers %s, want the secondary", got)
		}
		return code == http.StatusServiceUnavailable
	}, f.diag)
	t.Logf("the survivor refused %s after the SIGKILL of the other two: %s", refusedIn.Round(time.Millisecond), apiErrorText(body))
	if !strings.Contains(body, "no quorum: a change needs 2 of the 3 voters (dns-a, dns-b, dns-c)") {
		t.Errorf("refusal %s does not name the quorum lacked", body)
	}
	if v, err := f.view(0, ""); err != nil || v.on("east") {
		t.Errorf("the survivor's state: %+v %v, want east still off", v, err)
	}

	f.start(1)
	f.start(2)
	restarted := time.Now()
	var code int
	fleetWait(t, 15*time.Second, "a change through the survivor applies again", func() bool {
		code, body = f.post(0, "/v1/controls/east", "on")
		return code == http.StatusOK
	}, func() string { return body + "\n" + f.diag() })
	t.Logf("changes apply again %s after the two were restarted", time.Since(restarted).Round(time.Millisecond))
	fleetWait(t, 1*time.Second, "every member answers the primary", func() bool { return f.allAnswer(ctlPrimary, 0, 1, 2) }, f.diag)
}
