package operator

import (
	_ "embed"
	"fmt"
	"html/template"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/healthroute/healthroute/view"
)

// The status page's history: each check's status over the last 24 hours and its
// probe latency over the last hour, drawn as inline SVG (no scripts), and the latest
// status changes of every check at the top. Both are read from the blocks'
// histories when a page is rendered, for the checks on that page only, and cached
// with the page.
const (
	timelineSpan  = 24 * time.Hour
	timelineSlots = 96 // 15 minutes each
	sparkSpan     = time.Hour
	sparkSlots    = 60 // one a minute
	recentChanges = 20 // also the most times failing open listed
)

// checkHistory is what the page shows of one check's past.
type checkHistory struct {
	Timeline template.HTML // SVG
	Spark    template.HTML // SVG; "" without a latency in the last hour
	Changes  int           // in the timeline's span
}

// addHistory fills in d's recent changes and the histories of the checks on it.
func (m *statusModel) addHistory(d *statusData) {
	var hbs []HistoryBlock
	for _, b := range m.blocks {
		if hb, ok := b.(HistoryBlock); ok {
			hbs = append(hbs, hb)
		}
	}
	if len(hbs) == 0 {
		return
	}
	seen := map[string]bool{}
	for _, hb := range hbs {
		for _, c := range hb.RecentChanges(recentChanges) {
			k := c.Check + "/" + c.Time.String()
			if !seen[k] {
				seen[k] = true
				d.Recent = append(d.Recent, c)
			}
		}
	}
	slices.SortStableFunc(d.Recent, func(a, b view.CheckChange) int { return b.Time.Compare(a.Time) })
	d.Recent = d.Recent[:min(len(d.Recent), recentChanges)]
	spans := map[view.OpenSpan]bool{}
	for _, hb := range hbs {
		for _, sp := range hb.FailOpenHistory(m.now.Add(-timelineSpan)) {
			if !spans[sp] {
				spans[sp] = true
				d.FailedOpen = append(d.FailedOpen, sp)
			}
		}
	}
	slices.SortStableFunc(d.FailedOpen, func(a, b view.OpenSpan) int { return b.Start.Compare(a.Start) })
	d.FailedOpen = d.FailedOpen[:min(len(d.FailedOpen), recentChanges)]
	d.History = make(map[string]*checkHistory, len(d.Checks))
	for _, c := range d.Checks {
		for _, hb := range hbs {
			tl, ok := hb.Timeline(c.Name, m.now, timelineSpan, timelineSlots)
			if !ok {
				continue
			}
			sp, _ := hb.Timeline(c.Name, m.now, sparkSpan, sparkSlots)
			d.History[c.Name] = &checkHistory{Timeline: timelineSVG(tl), Spark: sparkSVG(sp.Latency), Changes: tl.Changes}
			break
		}
	}
}

// timelineSVG draws the slots as a strip: green healthy, red unhealthy at some time,
// grey no probe; its label says the same in words.
func timelineSVG(tl view.Timeline) template.HTML {
	var b strings.Builder
	down, none := 0, 0
	for _, s := range tl.Slots {
		switch s {
		case 1:
			down++
		case -1:
			none++
		}
	}
	fmt.Fprintf(&b, `<svg class="timeline" viewBox="0 0 %d 8" preserveAspectRatio="none" role="img" aria-label="last 24 hours: %d status changes; unhealthy in %d of %d quarter hours, no probes in %d">`,
		len(tl.Slots), tl.Changes, down, len(tl.Slots), none)
	for i := 0; i < len(tl.Slots); {
		j := i
		for j < len(tl.Slots) && tl.Slots[j] == tl.Slots[i] {
			j++
		}
		class := [...]string{"t-none", "t-ok", "t-bad"}[tl.Slots[i]+1]
		fmt.Fprintf(&b, `<rect class="%s" x="%d" y="0" width="%d" height="8"/>`, class, i, j-i)
		i = j
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

// sparkSVG draws the latencies (ms, -1 for none) as a line scaled to their
// largest; "" when there is none.
func sparkSVG(lat []float64) template.HTML {
	top, last, n := 0.0, -1.0, 0
	for _, v := range lat {
		if v >= 0 {
			top, last, n = math.Max(top, v), v, n+1
		}
	}
	if n == 0 {
		return ""
	}
	var pts strings.Builder
	for i, v := range lat {
		if v < 0 {
			continue
		}
		y := 19.0
		if top > 0 {
			y = 19 - 18*v/top
		}
		if n == 1 { // a lone minute: a short dash, since a point draws nothing
			fmt.Fprintf(&pts, "%.1f,%.1f ", max(float64(i)-1, 0), y)
		}
		fmt.Fprintf(&pts, "%d,%.1f ", i, y)
	}
	return template.HTML(fmt.Sprintf(`<svg class="spark" viewBox="0 0 %d 20" preserveAspectRatio="none" role="img" aria-label="probe latency over the last hour: latest %.1f ms, highest %.1f ms"><polyline points="%s"/></svg>`,
		len(lat)-1, last, top, strings.TrimSpace(pts.String())))
}

//go:embed status_history.html
var statusHistoryHTML string

// The history's templates join the status page's.
var _ = template.Must(statusTmpl.Parse(statusHistoryHTML))
