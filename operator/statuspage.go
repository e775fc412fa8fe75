package operator

import (
	"bytes"
	_ "embed"
	"fmt"
	"html/template"
	"net/http"
	"strconv"
	"time"

	"github.com/healthroute/healthroute/view"
)

// statusRefresh is how often, in seconds, the status page reloads itself unless the
// request asks otherwise with ?refresh=N (0: never, for reading at leisure or with a
// screen reader; at most maxStatusRefresh).
const (
	statusRefresh    = 5
	maxStatusRefresh = 3600
)

// statusPage serves GET /: the record trees and checks as HTML, from the same views
// as /v1/records and /v1/checks.
func (s *server) statusPage(w http.ResponseWriter, r *http.Request) {
	refresh := statusRefresh
	if v := r.URL.Query().Get("refresh"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > maxStatusRefresh {
			http.Error(w, fmt.Sprintf("refresh: expected seconds, 0-%d", maxStatusRefresh), http.StatusBadRequest)
			return
		}
		refresh = n
	}
	d := buildStatus(s.checks(), s.records(), time.Now())
	d.Refresh = refresh
	var b bytes.Buffer
	if err := statusTmpl.Execute(&b, d); err != nil {
		log.Errorf("api: status page: %v", err)
		http.Error(w, "the status page failed to render", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Write(b.Bytes())
}

// statusData is what the status page template renders.
type statusData struct {
	Now       time.Time
	Refresh   int
	Checks    []checkRow
	Trees     []*pageNode
	Resorts   []*pageNode // record groups failing open
	Overrides []checkRow
	Healthy   int // checks
	Unhealthy int
}

// badge is a health state as a CSS class (colour) and the words that say the same
// thing to someone who cannot see the colour.
type badge struct {
	Class string // ok, bad, resort, dyn, over
	Text  string
}

var (
	badgeOK   = badge{"ok", "healthy"}
	badgeBad  = badge{"bad", "unhealthy"}
	badgeDyn  = badge{"dyn", "depends on the client"}
	badgeLast = badge{"resort", "last resort: failing open"}
	badgeNone = badge{"bad", "no healthy answer"}
)

func healthBadge(ok bool) badge {
	if ok {
		return badgeOK
	}
	return badgeBad
}

// checkRow is one check with what the page says about it.
type checkRow struct {
	view.Check
	Badge badge
	Notes []string // override, disabled, inverted, awaiting a first result
}

// pageNode is one record group on the page, with its alias targets nested.
type pageNode struct {
	view.Record
	Anchor  string // id of the group's first drawing, "" on later drawings
	Ref     string // on later drawings: the first one's id (members are not repeated)
	Badge   badge
	Nested  bool
	Members []pageMember
}

// pageMember is one member; Child is the group an alias member points to.
type pageMember struct {
	view.Member
	Badge badge
	Check *checkRow
	Child *pageNode
}

// maxTreeDepth bounds the drawing; setup refuses alias cycles, so it is never reached
// by a valid configuration.
const maxTreeDepth = 32

func buildStatus(checks []view.Check, recs []view.Record, now time.Time) *statusData {
	d := &statusData{Now: now.UTC()}
	byName := map[string]*checkRow{}
	for _, c := range checks {
		row := checkRow{Check: c, Badge: healthBadge(c.Healthy)}
		if c.Override != nil {
			row.Notes = append(row.Notes, "forced "+healthBadge(*c.Override).Text+" by an operator")
			if c.Probed != nil {
				row.Notes = append(row.Notes, "probes say "+healthBadge(*c.Probed).Text)
			}
		}
		if c.Disabled {
			row.Notes = append(row.Notes, "disabled")
		}
		if c.Invert {
			row.Notes = append(row.Notes, "inverted")
		}
		if !c.Seen {
			row.Notes = append(row.Notes, "awaiting its first result")
		}
		if c.Healthy {
			d.Healthy++
		} else {
			d.Unhealthy++
		}
		d.Checks = append(d.Checks, row)
		if c.Override != nil {
			d.Overrides = append(d.Overrides, row)
		}
	}
	for i := range d.Checks {
		byName[d.Checks[i].Name] = &d.Checks[i]
	}

	key := func(name, typ string) string { return name + " " + typ }
	groups := map[string]*view.Record{}
	targeted := map[string]bool{}
	var order []string
	for i := range recs {
		k := key(recs[i].Name, recs[i].Type)
		if _, dup := groups[k]; dup {
			continue // the first block defining a name wins, as in the checks view
		}
		groups[k] = &recs[i]
		order = append(order, k)
		for _, m := range recs[i].Members {
			if m.Alias != "" {
				targeted[key(m.Alias, recs[i].Type)] = true
			}
		}
	}
	drawn := map[string]bool{}
	var build func(v *view.Record, depth int) *pageNode
	build = func(v *view.Record, depth int) *pageNode {
		k := key(v.Name, v.Type)
		n := &pageNode{Record: *v, Nested: depth > 0}
		anchor := "record-" + v.Name + "-" + v.Type
		if drawn[k] {
			n.Ref = anchor // a group several aliases share is drawn in full once
		} else {
			drawn[k] = true
			n.Anchor = anchor
			if v.LastResort {
				d.Resorts = append(d.Resorts, n)
			}
		}
		switch {
		case v.LastResort:
			n.Badge = badgeLast
		case v.Healthy == nil:
			n.Badge = badgeDyn
		case *v.Healthy:
			n.Badge = badgeOK
		default:
			n.Badge = badgeNone
		}
		for _, m := range v.Members {
			if n.Ref != "" {
				break
			}
			pm := pageMember{Member: m, Badge: healthBadge(m.Healthy), Check: byName[m.Check]}
			if t, ok := groups[key(m.Alias, v.Type)]; ok && m.Alias != "" && depth < maxTreeDepth {
				pm.Child = build(t, depth+1)
			}
			n.Members = append(n.Members, pm)
		}
		return n
	}
	for _, k := range order {
		if !targeted[k] {
			d.Trees = append(d.Trees, build(groups[k], 0))
		}
	}
	for _, k := range order { // groups reached from no root (not expected): drawn on their own
		if !drawn[k] {
			d.Trees = append(d.Trees, build(groups[k], 0))
		}
	}
	return d
}

// ago says how long before now t was, coarsely: "12s ago", "3m ago", "5h ago", "2d ago".
func ago(now, t time.Time) string {
	d := now.Sub(t)
	switch {
	case d < 0:
		return "just now"
	case d < time.Minute:
		return fmt.Sprintf("%ds ago", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm ago", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh ago", int(d.Hours()))
	}
	return fmt.Sprintf("%dd ago", int(d.Hours()/24))
}

var statusTmpl = template.Must(template.New("status").Funcs(template.FuncMap{
	"ago": ago,
	"utc": func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05 UTC") },
	"iso": func(t time.Time) string { return t.UTC().Format(time.RFC3339) },
}).Parse(statusHTML))

// statusHTML is the status page template. Health is shown by colour and, for readers
// who cannot see colour, by the badge's words; the page works without scripts.
//
//go:embed status.html
var statusHTML string
