package healthroute

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/healthroute/healthroute/control"
)

// controlsBlock is a block with two controls held in dir, answering the primary
// while east is on.
func controlsBlock(dir string) string {
	return fmt.Sprintf(`healthroute {
	check east control
	check west control
	controls {
		data_dir %s
		assertion one-region 1 east west
	}
	record www.example.org. failover {
		primary A 192.0.2.1 check east
		secondary A 198.51.100.1 check west
	}
}`, dir)
}

// TestControlsSingleInstance: without a fleet the block holds its controls alone
// (one voter), answers from them at once and keeps them across a restart.
func TestControlsSingleInstance(t *testing.T) {
	dir := t.TempDir()
	start := func() (*HealthRoute, *registry) {
		h := testHandler(t, controlsBlock(dir))
		if err := h.OnStartup(); err != nil {
			t.Fatal(err)
		}
		return h, h.reg
	}
	h, reg := start()
	answer := func(h *HealthRoute) string { return values(h.resolver, "www.example.org.", dns.TypeA) }
	if got := answer(h); got != "192.0.2.1" {
		t.Fatalf("answer %s, want the primary while east is on", got)
	}
	var err error
	waitUntil(t, 10*time.Second, "the single voter accepts a change", func() bool {
		err = reg.node.Change(context.Background(), control.Request{Token: "t", Member: "local", Set: map[string]bool{"east": false}})
		return err == nil
	}, func() string { return fmt.Sprint(err) })
	if got := answer(h); got != "198.51.100.1" {
		t.Fatalf("answer %s after east off, want the secondary", got)
	}
	err = reg.node.Change(context.Background(), control.Request{Set: map[string]bool{"west": false}})
	if !errors.Is(err, control.ErrRefused) || !strings.Contains(err.Error(), "one-region") {
		t.Fatalf("west off as well: %v, want the rule's refusal", err)
	}
	h.OnShutdown()

	h2, _ := start() // a restart: a new registry on the same data directory
	t.Cleanup(func() { h2.OnShutdown() })
	if got := answer(h2); got != "198.51.100.1" {
		t.Fatalf("after a restart, answer %s, want the secondary (east still off)", got)
	}
}

// TestControlsRuleBrokenAtStartup: a block whose rule the state already breaks is
// refused at the rule's line, and starts nothing.
func TestControlsRuleBrokenAtStartup(t *testing.T) {
	dir := t.TempDir()
	h := testHandler(t, controlsBlock(dir))
	if err := h.OnStartup(); err != nil {
		t.Fatal(err)
	}
	var err error
	waitUntil(t, 10*time.Second, "east off", func() bool {
		err = h.reg.node.Change(context.Background(), control.Request{Set: map[string]bool{"east": false}})
		return err == nil
	}, func() string { return fmt.Sprint(err) })
	h.OnShutdown()

	stricter := strings.Replace(controlsBlock(dir), "assertion one-region 1 east west", "assertion both 2 east west", 1)
	h2 := testHandler(t, stricter)
	err = h2.OnStartup()
	if err == nil || !strings.Contains(err.Error(), "Testfile:6 - Error during parsing: controls: rule both (at least 2 of {east, west} on) is broken by the state held now (east off, west on)") {
		t.Fatalf("OnStartup = %v, want the broken rule at its line", err)
	}
	if h2.reg.node != nil || h2.stop != nil {
		t.Errorf("a refused block left its node or subscription running")
	}
}

// TestControlCheckInvert: a control's switch decides its check, and invert flips
// it (unlike an override of another check, which invert does not touch).
func TestControlCheckInvert(t *testing.T) {
	r, _ := testResolver(t, `healthroute {
	check east control
	check drained control {
		invert
	}
	record a.example.org. failover {
		primary A 192.0.2.1 check east
		secondary A 198.51.100.1
	}
	record b.example.org. failover {
		primary A 192.0.2.2 check drained
		secondary A 198.51.100.2
	}
}`)
	for _, tc := range []struct {
		over         map[string]bool
		wantA, wantB string
	}{
		{nil, "192.0.2.1", "198.51.100.2"}, // never set: on; drained inverted: unhealthy
		{map[string]bool{"east": false, "drained": false}, "198.51.100.1", "192.0.2.2"},
		{map[string]bool{"east": true, "drained": true}, "192.0.2.1", "198.51.100.2"},
	} {
		r.SetOverrides(tc.over)
		if a, b := values(r, "a.example.org.", dns.TypeA), values(r, "b.example.org.", dns.TypeA); a != tc.wantA || b != tc.wantB {
			t.Errorf("switches %v: a %s b %s, want %s %s", tc.over, a, b, tc.wantA, tc.wantB)
		}
	}
	for _, c := range r.Checks() {
		if c.Override != nil {
			t.Errorf("check %s shows its switch as an operator override", c.Name)
		}
	}
}
