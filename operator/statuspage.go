package operator

import (
	"bytes"
	_ "embed"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
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

// perPage is how many record trees and how many checks one page of the status page
// shows; a configuration with more is paged, problems first. maxQuery bounds ?q=.
const (
	perPage  = 50
	maxQuery = 256
)

// pageQuery is what a status page request asks for: ?refresh=N, ?q=TEXT (a search
// in names and targets) and ?page=N.
type pageQuery struct {
	Refresh int
	Q       string // lower case
	Page    int    // from 1
}

func parsePageQuery(r *http.Request) (pageQuery, error) {
	qv := r.URL.Query()
	pq := pageQuery{Refresh: statusRefresh, Page: 1, Q: strings.ToLower(strings.TrimSpace(qv.Get("q")))}
	if v := qv.Get("refresh"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > maxStatusRefresh {
			return pq, fmt.Errorf("refresh: expected seconds, 0-%d", maxStatusRefresh)
		}
		pq.Refresh = n
	}
	if v := qv.Get("page"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 1_000_000 {
			return pq, errors.New("page: expected a page number from 1")
		}
		pq.Page = n
	}
	if len(pq.Q) > maxQuery {
		return pq, fmt.Errorf("q: at most %d bytes", maxQuery)
	}
	return pq, nil
}

// key is the query's cache key among one state's renderings.
func (q pageQuery) key() string { return fmt.Sprintf("%d/%d/%s", q.Refresh, q.Page, q.Q) }

// url is the status page's address for q on page n.
func (q pageQuery) url(n int) string {
	v := url.Values{}
	if q.Q != "" {
		v.Set("q", q.Q)
	}
	if n > 1 {
		v.Set("page", strconv.Itoa(n))
	}
	if q.Refresh != statusRefresh {
		v.Set("refresh", strconv.Itoa(q.Refresh))
	}
	return "?" + v.Encode()
}

// statusPage serves GET /: the record trees and checks as HTML, from the same views
// as /v1/records and /v1/checks, built once per state and rendered once per query.
func (s *server) statusPage(w http.ResponseWriter, r *http.Request) {
	pq, err := parsePageQuery(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	v := s.current()
	h := w.Header()
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'")
	h.Set("X-Content-Type-Options", "nosniff")
	if notModified(w, r, v.etag) {
		return
	}
	page, err := v.page(r.Context(), s.gate, pq)
	if err == nil && !s.pace.wait(r.Context(), bodyUnits(len(page))) {
		err = errBusy
	}
	if err != nil {
		busy(w, err)
		return
	}
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Length", strconv.Itoa(len(page)))
	w.Write(page)
}

// render executes the template for one page of the model.
func (m *statusModel) render(q pageQuery) ([]byte, error) {
	var b bytes.Buffer
	d := m.page(q)
	m.addHistory(d)
	if err := statusTmpl.Execute(&b, d); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// statusModel is the status page of one state: every check and record tree, in the
// order the page shows them (problems first), with the counts the summary shows.
// Built once per state; each request renders one page of it.
type statusModel struct {
	now       time.Time
	checks    []checkRow  // unhealthy first, then by name
	trees     []*pageNode // failing open first, then with an unhealthy member, then Corefile order
	resorts   []*pageNode // record groups failing open
	overrides []checkRow
	controls  *controlsView // nil without routing controls
	healthy   int           // checks
	unhealthy int
	blocks    []Block // for the checks' histories (statushistory.go)
}

// statusData is what the status page template renders: one page of a statusModel.
type statusData struct {
	Now        time.Time
	Refresh    int
	Query      string // the search asked for; "" for none
	Paged      bool   // the configuration does not fit one page: paging and search are offered
	Checks     []checkRow
	Trees      []*pageNode
	Resorts    []*pageNode // at most perPage
	Overrides  []checkRow  // at most perPage
	NChecks    int         // in the whole configuration, as are the next four
	Healthy    int
	Unhealthy  int
	NResorts   int
	NOverrides int
	Controls   *controlsView
	// ChecksShown and TreesShown say which of how many (matching) items this page has.
	ChecksShown, TreesShown shown
	Prev, Next              string                   // links to the neighbouring pages; "" at an end
	Recent                  []view.CheckChange       // the latest status changes, newest first
	History                 map[string]*checkHistory // of the checks on this page, by name
	FailedOpen              []view.OpenSpan          // times record groups failed open in the last 24 h, latest first
}

// shown is a section's place in the paging: items From to To (from 1) of Of.
type shown struct{ From, To, Of int }

// page selects page q.Page of the rows matching q.Q.
func (m *statusModel) page(q pageQuery) *statusData {
	d := &statusData{Now: m.now, Refresh: q.Refresh, Query: q.Q,
		Paged:   len(m.checks) > perPage || len(m.trees) > perPage || q.Q != "" || q.Page > 1,
		NChecks: len(m.checks), Healthy: m.healthy, Unhealthy: m.unhealthy,
		NResorts: len(m.resorts), NOverrides: len(m.overrides), Controls: m.controls,
		Resorts: m.resorts[:min(len(m.resorts), perPage)], Overrides: m.overrides[:min(len(m.overrides), perPage)]}
	checks, trees := m.checks, m.trees
	if q.Q != "" {
		checks = slices.DeleteFunc(slices.Clone(checks), func(c checkRow) bool { return !strings.Contains(c.search, q.Q) })
		trees = slices.DeleteFunc(slices.Clone(trees), func(n *pageNode) bool { return !strings.Contains(n.search, q.Q) })
	}
	d.Checks, d.ChecksShown = pageOf(checks, q.Page)
	d.Trees, d.TreesShown = pageOf(trees, q.Page)
	if q.Page > 1 {
		d.Prev = q.url(q.Page - 1)
	}
	if q.Page*perPage < max(len(checks), len(trees)) {
		d.Next = q.url(q.Page + 1)
	}
	return d
}

func pageOf[T any](all []T, page int) ([]T, shown) {
	from := min((page-1)*perPage, len(all))
	to := min(from+perPage, len(all))
	return all[from:to], shown{From: from + 1, To: to, Of: len(all)}
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
	Badge  badge
	Notes  []string // override, disabled, inverted, awaiting a first result
	search string   // what ?q= matches: the name and target, lower case
}

// pageNode is one record group on the page, with its alias targets nested.
type pageNode struct {
	view.Record
	Anchor  string // id of the group's first drawing, "" on later drawings
	Ref     string // on later drawings: the first one's id (members are not repeated)
	Badge   badge
	Nested  bool
	Members []pageMember
	search  string // roots: what ?q= matches, the names, targets and checks of the tree, lower case
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

// buildStatus builds the status page of checks and record groups, as of now.
func buildStatus(checks []view.Check, recs []view.Record, now time.Time) *statusModel {
	m := &statusModel{now: now.UTC()}
	byName := m.addChecks(checks)
	t := newTreeBuilder(m, recs, byName)
	for _, k := range t.roots() {
		m.trees = append(m.trees, t.build(t.groups[k], 0))
	}
	for _, k := range t.order { // groups reached from no root (not expected): drawn on their own
		if !t.drawn[k] {
			m.trees = append(m.trees, t.build(t.groups[k], 0))
		}
	}
	return m
}

// addChecks adds a row for each check, unhealthy first, and counts them; it returns
// the rows by check name.
func (m *statusModel) addChecks(checks []view.Check) map[string]*checkRow {
	for _, c := range checks {
		row := checkRow{Check: c, Badge: healthBadge(c.Healthy), search: strings.ToLower(c.Name + "\n" + c.Target)}
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
			m.healthy++
		} else {
			m.unhealthy++
		}
		m.checks = append(m.checks, row)
		if c.Override != nil {
			m.overrides = append(m.overrides, row)
		}
	}
	slices.SortStableFunc(m.checks, func(a, b checkRow) int { // unhealthy first, each part by name
		switch {
		case a.Healthy == b.Healthy:
		case !a.Healthy:
			return -1
		default:
			return 1
		}
		return strings.Compare(a.Name, b.Name)
	})
	byName := make(map[string]*checkRow, len(m.checks))
	for i := range m.checks {
		byName[m.checks[i].Name] = &m.checks[i]
	}
	return byName
}

// treeBuilder draws the record groups as trees from their roots (groups no alias
// points to), alias members nesting the group they point to.
type treeBuilder struct {
	m        *statusModel
	byName   map[string]*checkRow
	groups   map[string]*view.Record // by treeKey; the first block defining a name wins
	order    []string                // keys in configuration order
	targeted map[string]bool         // keys some alias points to
	ranks    map[string]int
	drawn    map[string]bool
	search   strings.Builder // the text of the tree being built, for ?q=
}

func treeKey(name, typ string) string { return name + " " + typ }

func newTreeBuilder(m *statusModel, recs []view.Record, byName map[string]*checkRow) *treeBuilder {
	t := &treeBuilder{m: m, byName: byName, groups: map[string]*view.Record{}, targeted: map[string]bool{},
		ranks: map[string]int{}, drawn: map[string]bool{}}
	for i := range recs {
		k := treeKey(recs[i].Name, recs[i].Type)
		if _, dup := t.groups[k]; dup {
			continue // the first block defining a name wins, as in the checks view
		}
		t.groups[k] = &recs[i]
		t.order = append(t.order, k)
		for _, mb := range recs[i].Members {
			if mb.Alias != "" {
				t.targeted[treeKey(mb.Alias, recs[i].Type)] = true
			}
		}
	}
	return t
}

// roots returns the keys of the groups no alias points to, problems first, so a group
// two trees share is drawn in full in the one shown first.
func (t *treeBuilder) roots() []string {
	var roots []string
	for _, k := range t.order {
		if !t.targeted[k] {
			roots = append(roots, k)
		}
	}
	slices.SortStableFunc(roots, func(a, b string) int { return t.rank(t.groups[a], 0) - t.rank(t.groups[b], 0) })
	return roots
}

// rank is a group's rank, the worst of its own and its targets': 0 failing open, 1
// unhealthy or with an unhealthy member, 2 healthy.
func (t *treeBuilder) rank(v *view.Record, depth int) int {
	k := treeKey(v.Name, v.Type)
	if r, ok := t.ranks[k]; ok {
		return r
	}
	r := 2
	switch {
	case v.LastResort:
		r = 0
	case v.Healthy != nil && !*v.Healthy:
		r = 1
	}
	t.ranks[k] = r // before the members: a cycle (refused by setup) ends here
	for _, mv := range v.Members {
		if !mv.Healthy {
			r = min(r, 1)
		}
		if c, ok := t.groups[treeKey(mv.Alias, v.Type)]; ok && mv.Alias != "" && depth < maxTreeDepth {
			r = min(r, t.rank(c, depth+1))
		}
	}
	t.ranks[k] = r
	return r
}

// build draws v and, below its alias members, the groups they point to; a group
// already drawn is referred to by its anchor.
func (t *treeBuilder) build(v *view.Record, depth int) *pageNode {
	k := treeKey(v.Name, v.Type)
	n := &pageNode{Record: *v, Nested: depth > 0}
	if depth == 0 {
		t.search.Reset()
	}
	t.search.WriteString(strings.ToLower(v.Name))
	t.search.WriteByte('\n')
	anchor := "record-" + v.Name + "-" + v.Type
	if t.drawn[k] {
		n.Ref = anchor // a group several aliases share is drawn in full once
	} else {
		t.drawn[k] = true
		n.Anchor = anchor
		if v.LastResort {
			t.m.resorts = append(t.m.resorts, n)
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
	for _, mv := range v.Members {
		if n.Ref != "" {
			break
		}
		pm := pageMember{Member: mv, Badge: healthBadge(mv.Healthy), Check: t.byName[mv.Check]}
		t.search.WriteString(strings.ToLower(mv.Target + "\n" + mv.Check + "\n"))
		if c, ok := t.groups[treeKey(mv.Alias, v.Type)]; ok && mv.Alias != "" && depth < maxTreeDepth {
			pm.Child = t.build(c, depth+1)
		}
		n.Members = append(n.Members, pm)
	}
	if depth == 0 {
		n.search = t.search.String()
	}
	return n
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
	"sub": func(a, b int) int { return a - b },
	"utc": func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05 UTC") },
	"iso": func(t time.Time) string { return t.UTC().Format(time.RFC3339) },
}).Parse(statusHTML))

// statusHTML is the status page template. Health is shown by colour and, for readers
// who cannot see colour, by the badge's words; the page works without scripts.
//
//go:embed status.html
var statusHTML string
