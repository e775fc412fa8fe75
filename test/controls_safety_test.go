package test

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestControlsSafetyRuleUnderConcurrentChanges: with the rule "at least 1 of {east,
// west} on", 200 rounds of two concurrent requests (east off through dns-a, west
// off through dns-b): exactly one is applied each round, the other refused naming
// the rule; a batch through dns-c turns both on again between rounds.
func TestControlsSafetyRuleUnderConcurrentChanges(t *testing.T) {
	if testing.Short() {
		t.Skip("three CoreDNS processes")
	}
	f := newCtlFleet(t, 3, false)
	for i := range f.ms {
		f.start(i)
	}
	f.ready(15*time.Second, 0, 1, 2)
	const rounds = 200
	wins := map[string]int{}
	start := time.Now()
	for round := range rounds {
		var wg sync.WaitGroup
		codes, bodies := make([]int, 2), make([]string, 2)
		for i, c := range []string{"east", "west"} {
			wg.Go(func() { codes[i], bodies[i] = f.post(i, "/v1/controls/"+c, "off") })
		}
		wg.Wait()
		ok, refused := 0, 0
		for i := range codes {
			switch {
			case codes[i] == http.StatusOK:
				ok++
				wins[[]string{"east", "west"}[i]]++
			case codes[i] == http.StatusConflict && strings.Contains(bodies[i], "refused by rule one-region (at least 1 of {east, west} on)"):
				refused++
			}
		}
		if ok != 1 || refused != 1 {
			t.Fatalf("round %d: %d %s / %d %s: want exactly one applied and one refused by one-region", round, codes[0], bodies[0], codes[1], bodies[1])
		}
		if code, body := f.post(2, "/v1/controls", `{"set": {"east": "on", "west": "on"}, "reason": "next round"}`); code != http.StatusOK {
			t.Fatalf("round %d: the batch turning both on: %d %s", round, code, body)
		}
	}
	t.Logf("%d rounds in %s: east won %d, west %d", rounds, time.Since(start).Round(time.Millisecond), wins["east"], wins["west"])
	v, err := f.view(2, "?consistent=1&audit=3")
	if err != nil || len(v.Audit) != 3 || v.Audit[1].Refused == "" && v.Audit[2].Refused == "" || v.Audit[0].Token != "ops" {
		t.Errorf("the audit's last 3 entries %+v (%v), want the batch by ops first and a refusal among the two before", v.Audit, err)
	}
	code, page := httpDo(t, http.MethodGet, fmt.Sprintf("http://127.0.0.1:%d/?refresh=0", f.ms[0].api), "", "")
	for _, want := range []string{"Routing controls", "one-region", "at least 1 of {east, west} on", "refused by rule one-region", "next round"} {
		if code != http.StatusOK || !strings.Contains(page, want) {
			t.Errorf("the status page (%d) lacks %q", code, want)
		}
	}
}
