package operator

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/healthroute/healthroute/history"
	"github.com/healthroute/healthroute/view"
)

// historyBlock is a block of n checks whose histories are a real history.Store.
type historyBlock struct {
	dataBlock
	n     int
	store *history.Store
}

func (b *historyBlock) Checks() []view.Check {
	out := make([]view.Check, b.n)
	for i := range out {
		out[i] = view.Check{Name: fmt.Sprintf("c%05d", i), Type: "http", Interval: "30s", Healthy: i%2 == 0, Seen: true}
	}
	return out
}
func (b *historyBlock) History(name string) (view.History, bool) { return b.store.Get(name, name) }
func (b *historyBlock) Timeline(name string, now time.Time, span time.Duration, n int) (view.Timeline, bool) {
	return b.store.Timeline(name, now, span, n)
}
func (b *historyBlock) RecentChanges(n int) []view.CheckChange {
	return b.store.Latest(n, func(fp string) (string, bool) { return fp, true })
}
func (b *historyBlock) FailOpenHistory(time.Time) []view.OpenSpan { return nil }

// newHistoryBlock returns a block of n checks that flapped for an hour up to now: a
// probe every 30 s, a change every other probe.
func newHistoryBlock(n int, now time.Time) *historyBlock {
	b := &historyBlock{n: n, store: history.New()}
	for step := range 120 {
		at := now.Add(-time.Hour + time.Duration(step)*30*time.Second)
		for i := range n {
			name := fmt.Sprintf("c%05d", i)
			b.store.Probe(name, name, at, step%4 < 2, time.Duration(step%7)*time.Millisecond)
			if step%2 == 1 {
				b.store.Change(name, name, at, step%4 == 1, "status 503 outside 200-399", nil)
			}
		}
	}
	return b
}

// TestStatusPageHistory renders the page of a block whose checks flapped: the 20
// latest changes at the top, newest first, and a timeline and a sparkline for each
// check on the page, none for the checks of other pages.
func TestStatusPageHistory(t *testing.T) {
	now := time.Now()
	b := newHistoryBlock(60, now)
	m := buildStatus(b.Checks(), nil, now)
	m.blocks = []Block{b}
	page, err := m.render(pageQuery{Page: 1})
	if err != nil {
		t.Fatal(err)
	}
	html := string(page)
	if n := strings.Count(html, `<svg class="timeline"`); n != perPage {
		t.Errorf("%d timelines, want one for each of the %d checks on the page", n, perPage)
	}
	if n := strings.Count(html, `<svg class="spark"`); n != perPage {
		t.Errorf("%d sparklines, want %d", n, perPage)
	}
	if !strings.Contains(html, `aria-label="last 24 hours: 60 status changes`) {
		t.Error("no timeline says its 60 changes")
	}
	recent := html[strings.Index(html, `<section class="recent"`):]
	recent = recent[:strings.Index(recent, "</section>")]
	if n := strings.Count(recent, "<li>"); n != recentChanges {
		t.Errorf("%d recent changes, want %d", n, recentChanges)
	}
	if strings.Contains(html, "<script") {
		t.Error("the page has a script")
	}
}

// BenchmarkStatusPageHistory10000 builds and renders the first status page of
// 10,000 checks with an hour of flapping each, with their histories (the recent
// changes of all 10,000, the timelines of the 50 on the page) and without.
func BenchmarkStatusPageHistory10000(b *testing.B) {
	now := time.Now()
	blk := newHistoryBlock(10_000, now)
	checks := blk.Checks()
	for _, withHistory := range []bool{false, true} {
		b.Run(fmt.Sprintf("history=%v", withHistory), func(b *testing.B) {
			for range b.N {
				m := buildStatus(checks, nil, now)
				if withHistory {
					m.blocks = []Block{blk}
				}
				if _, err := m.render(pageQuery{Page: 1}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
