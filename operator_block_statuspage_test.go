package healthroute

import (
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/healthroute/healthroute/operator"
)

// statusServer builds an API server over one block, in process, with the named
// checks down.
func statusServer(t *testing.T, block string, down ...string) (*operator.Operator, *HealthRoute) {
	t.Helper()
	cfg := mustParse(t, block)
	reg := &registry{}
	h := newHandler(cfg, reg)
	reg.op.Register(h)
	h.resolver.Publish(snapshot(cfg, down...))
	return &reg.op, h
}

func getStatus(t *testing.T, op *operator.Operator, query string) (int, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	op.Handler("").ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/"+query, nil))
	return rec.Code, rec.Body.String()
}

// TestStatusPageRender renders the page from the same views as the JSON API: every
// record group, the tree's nesting, failed checks, the last resort and overrides, each
// said in words as well as colour.
func TestStatusPageRender(t *testing.T) {
	s, h := statusServer(t, explainBlock, "c1", "c2", "c5")
	code, page := getStatus(t, s, "")
	if code != http.StatusOK {
		t.Fatalf("GET /: %d\n%s", code, page)
	}
	for _, want := range []string{
		`<html lang="en">`, `name="viewport"`, `<meta http-equiv="refresh" content="5">`,
		`<h1>healthroute status</h1>`,
		// every record set, roots as trees and alias targets nested
		`id="record-www.example.org.-A"`, `id="record-use1.example.org.-A"`, `id="record-apse2.example.org.-A"`,
		`id="record-geo.example.org.-A"`, `id="record-net.example.org.-A"`,
		`<span class="key">weight 0</span>`, `<span class="key">region us-east-1</span>`, `<span class="key">cidr 192.0.2.0/24</span>`,
		// use1's three members are down: it fails open, highlighted and listed
		`<section class="alert" id="failing-open"`, `<a href="#record-use1.example.org.-A">use1.example.org. A</a>`,
		`<span class="badge resort">last resort: failing open</span>`,
		`<tr id="check-c1" class="check is-bad" data-health="unhealthy"`,
		`<tr id="check-c3" class="check is-ok" data-health="healthy"`,
		`<th scope="col" role="columnheader">Last error</th>`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %s", want)
		}
	}
	// Trees are drawn from their roots: net aliases geo and www, geo aliases www, www
	// aliases use1 and apse2; so one tree, net's, holds every group.
	if n := strings.Count(page, `<article class="tree"`); n != 1 {
		t.Errorf("%d trees, want 1 root (net)", n)
	}
	if regexp.MustCompile(`<article class="tree" id="record-use1`).MatchString(page) {
		t.Error("use1 drawn as a root although www aliases it")
	}

	// An operator override shows on the check and on the members that use it.
	if err := s.Override("c3", new(false)); err != nil {
		t.Fatal(err)
	}
	_, page = getStatus(t, s, "?refresh=0")
	for _, want := range []string{
		`<section class="overrides" id="overrides"`, `<a href="#check-c3">c3</a>: forced unhealthy by an operator; probes say healthy`,
		`<tr id="check-c3" class="check is-bad" data-health="unhealthy"`, `<span class="badge over">override: unhealthy</span>`,
		`This page does not refresh`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("with an override: page lacks %s", want)
		}
	}
	if strings.Contains(page, `http-equiv="refresh"`) {
		t.Error("?refresh=0 still refreshes")
	}
	if code, _ := getStatus(t, s, "?refresh=x"); code != http.StatusBadRequest {
		t.Errorf("?refresh=x: %d, want 400", code)
	}
	_ = h
}

// TestStatusPageSharedGroup: a group two aliases point to is drawn in full once; the
// second drawing links to the first and says how many members it has.
func TestStatusPageSharedGroup(t *testing.T) {
	op, _ := statusServer(t, `healthroute {`+checks+`
		record a.example.org. weighted {
			weight 10 alias shared.example.org.
			weight 10 A 192.0.2.9
		}
		record b.example.org. failover {
			primary   alias shared.example.org.
			secondary A 192.0.2.8
		}
		record shared.example.org. weighted {
			weight 10 A 192.0.2.1 check c1
			weight 10 A 192.0.2.2 check c2
		}
	}`, "c1")
	code, page := getStatus(t, op, "")
	if code != http.StatusOK {
		t.Fatalf("GET /: %d\n%s", code, page)
	}
	if n := strings.Count(page, `id="record-shared.example.org.-A"`); n != 1 {
		t.Errorf("the shared group has %d anchors, want 1", n)
	}
	if !strings.Contains(page, `Its 2 members are drawn <a href="#record-shared.example.org.-A">above</a>`) {
		t.Errorf("the second drawing does not link to the first:\n%s", page)
	}
}
