package lab

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/healthroute/healthroute/examples/websocket-dr/client"
)

// Timeline is what a failover looked like, measured from the fault.
type Timeline struct {
	Clients   int
	DNSSwitch time.Duration // fault → healthroute first answered the standby

	FirstAttempt, LastFirstAttempt time.Duration // fault → each client's first reconnect attempt, earliest and latest
	Busiest100ms                   int           // most first attempts that fell in one 100 ms window
	Attempts                       int           // reconnect attempts in all, until every client was back
	FirstBack, AllBack             time.Duration // fault → first and last client resumed in the standby

	Acked      int           // writes acknowledged by the primary before the fault
	Lost       int           // of those, writes the standby did not hold on resume
	LostUsers  int           // users who lost at least one write
	LostMax    uint64        // most writes one user lost
	OldestLost time.Duration // age at the fault of the oldest lost write
	Missing    []string      // users whose lost writes could not be matched to acks (should be none)
}

// Measure builds the timeline of a fault at fault, after which DNS switched at
// dnsSwitch and the clients moved to region standby.
func Measure(f *Fleet, fault, dnsSwitch time.Time, standby string) Timeline {
	tl := Timeline{Clients: len(f.Members), DNSSwitch: dnsSwitch.Sub(fault)}
	events := f.Events()
	first := map[string]time.Time{}
	back := map[string]client.Event{}
	for _, e := range events {
		if e.Time.Before(fault) {
			continue
		}
		if _, done := back[e.User]; done {
			continue
		}
		switch e.State {
		case client.Connecting:
			tl.Attempts++
			if _, ok := first[e.User]; !ok {
				first[e.User] = e.Time
			}
		case client.Connected:
			if e.Region == standby {
				back[e.User] = e
			}
		}
	}
	var starts []time.Time
	for _, t := range first {
		starts = append(starts, t)
	}
	slices.SortFunc(starts, func(a, b time.Time) int { return a.Compare(b) })
	if len(starts) > 0 {
		tl.FirstAttempt, tl.LastFirstAttempt = starts[0].Sub(fault), starts[len(starts)-1].Sub(fault)
	}
	for i, j := 0, 0; i < len(starts); i++ { // sliding 100 ms window
		for starts[i].Sub(starts[j]) >= 100*time.Millisecond {
			j++
		}
		tl.Busiest100ms = max(tl.Busiest100ms, i-j+1)
	}
	for _, m := range f.Members {
		acks := m.Acks()
		for _, a := range acks {
			if a.Time.Before(fault) {
				tl.Acked++
			}
		}
		e, ok := back[m.User]
		if !ok {
			continue
		}
		if tl.FirstBack == 0 || e.Time.Sub(fault) < tl.FirstBack {
			tl.FirstBack = e.Time.Sub(fault)
		}
		tl.AllBack = max(tl.AllBack, e.Time.Sub(fault))
		if e.Lost == 0 {
			continue
		}
		tl.Lost += int(e.Lost)
		tl.LostUsers++
		tl.LostMax = max(tl.LostMax, e.Lost)
		// The oldest lost write is the first one the standby lacks: version e.Version+1,
		// as the primary acknowledged it (its first acknowledgement; later ones with the
		// same number came from the standby).
		i := slices.IndexFunc(acks, func(a Ack) bool { return a.Version == e.Version+1 })
		if i < 0 {
			tl.Missing = append(tl.Missing, m.User)
			continue
		}
		tl.OldestLost = max(tl.OldestLost, fault.Sub(acks[i].Time))
	}
	return tl
}

// String prints the timeline for people, in the order things happened.
func (tl Timeline) String() string {
	type line struct {
		at   time.Duration
		text string
	}
	lines := []line{
		{0, fmt.Sprintf("primary killed (SIGKILL), %d clients connected to it", tl.Clients)},
		{tl.FirstAttempt, "first client reconnect attempt (full jitter)"},
		{tl.LastFirstAttempt, fmt.Sprintf("last client's first reconnect attempt; at most %d of %d first attempts in any 100 ms", tl.Busiest100ms, tl.Clients)},
		{tl.DNSSwitch, "healthroute answers the standby (DNS watched every 50 ms)"},
		{tl.FirstBack, "first client resumed its session in the standby"},
		{tl.AllBack, fmt.Sprintf("all %d clients resumed in the standby (%d connect attempts in all)", tl.Clients, tl.Attempts)},
	}
	slices.SortStableFunc(lines, func(a, b line) int { return cmp.Compare(a.at, b.at) })
	var b strings.Builder
	for _, l := range lines {
		fmt.Fprintf(&b, "  t+%6d ms  %s\n", l.at.Milliseconds(), l.text)
	}
	fmt.Fprintf(&b, "  data: %d of %d acknowledged writes lost (%d users, at most %d per user), all acknowledged within %d ms before the crash\n",
		tl.Lost, tl.Acked, tl.LostUsers, tl.LostMax, tl.OldestLost.Milliseconds())
	return b.String()
}
