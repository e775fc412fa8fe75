package lab

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/healthroute/healthroute/examples/websocket-dr/client"
)

// Ack is one acknowledged write as a client saw it.
type Ack struct {
	Version uint64
	Time    time.Time
}

// Member is one client of a Fleet with the writes it got acknowledged.
type Member struct {
	User   string
	Client *client.Client

	mu   sync.Mutex
	acks []Ack
}

// Acks returns a copy of the acknowledged writes, in order.
func (m *Member) Acks() []Ack {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.acks)
}

// Fleet runs clients, each writing to its session every WriteEvery, and records every
// state change they report.
type Fleet struct {
	Members []*Member

	mu     sync.Mutex
	events []client.Event
	notify chan struct{} // signalled (never blocking) after each event
	wg     sync.WaitGroup
	cancel context.CancelFunc
}

// StartFleet starts n clients configured by base (User and OnEvent are set per
// client), users u000, u001, ... Each writes every writeEvery until Stop.
func StartFleet(ctx context.Context, n int, base client.Options, writeEvery time.Duration) *Fleet {
	ctx, cancel := context.WithCancel(ctx)
	f := &Fleet{notify: make(chan struct{}, 1), cancel: cancel}
	for i := range n {
		o := base
		o.User = fmt.Sprintf("u%03d", i)
		o.OnEvent = f.record
		m := &Member{User: o.User, Client: client.New(o)}
		f.Members = append(f.Members, m)
		f.wg.Add(2)
		go func() {
			defer f.wg.Done()
			m.Client.Run(ctx)
		}()
		go func() {
			defer f.wg.Done()
			m.write(ctx, writeEvery)
		}()
	}
	return f
}

func (m *Member) write(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for n := 0; ; n++ {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		v, err := m.Client.Write(ctx, fmt.Sprintf("%s-%d", m.User, n))
		if err != nil {
			continue // not acknowledged: not counted, may be retried by the next tick
		}
		m.mu.Lock()
		m.acks = append(m.acks, Ack{Version: v, Time: time.Now()})
		m.mu.Unlock()
	}
}

func (f *Fleet) record(e client.Event) {
	f.mu.Lock()
	f.events = append(f.events, e)
	f.mu.Unlock()
	select {
	case f.notify <- struct{}{}:
	default:
	}
}

// Events returns a copy of every event so far, in the order reported.
func (f *Fleet) Events() []client.Event {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.events)
}

// Stop ends every client and writer and waits for them.
func (f *Fleet) Stop() {
	f.cancel()
	f.wg.Wait()
}

// Wait returns once cond holds for the events so far, or an error after within.
func (f *Fleet) Wait(within time.Duration, what string, cond func([]client.Event) bool) error {
	t := time.NewTimer(within)
	defer t.Stop()
	for {
		if cond(f.Events()) {
			return nil
		}
		select {
		case <-f.notify:
		case <-t.C:
			if cond(f.Events()) {
				return nil
			}
			return fmt.Errorf("%s: not within %s", what, within)
		}
	}
}

// Current returns each user's last Connected region since after ("" when not
// connected now).
func Current(events []client.Event, after time.Time) map[string]string {
	cur := map[string]string{}
	for _, e := range events {
		if e.Time.Before(after) {
			continue
		}
		switch e.State {
		case client.Connected:
			cur[e.User] = e.Region
		case client.Disconnected, client.Failed:
			cur[e.User] = ""
		}
	}
	return cur
}

// AllIn reports whether every one of n users is connected to region.
func AllIn(region string, n int, after time.Time) func([]client.Event) bool {
	return func(ev []client.Event) bool {
		in := 0
		for _, r := range Current(ev, after) {
			if r == region {
				in++
			}
		}
		return in == n
	}
}

// WaitWrites returns once every member has at least n acknowledged writes, or an
// error after within.
func (f *Fleet) WaitWrites(n int, within time.Duration) error {
	deadline := time.NewTimer(within)
	defer deadline.Stop()
	tick := time.NewTicker(50 * time.Millisecond) // writes do not notify; poll them
	defer tick.Stop()
	for {
		fewest := n
		for _, m := range f.Members {
			fewest = min(fewest, len(m.Acks()))
		}
		if fewest >= n {
			return nil
		}
		select {
		case <-deadline.C:
			return fmt.Errorf("a client has only %d acknowledged writes after %s, want %d", fewest, within, n)
		case <-tick.C:
		}
	}
}
