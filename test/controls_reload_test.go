package test

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	dto "github.com/prometheus/client_model/go"

	"github.com/healthroute/healthroute/internal/coretest"
)

// TestControlsSingleInstanceReloadAndRestart runs one CoreDNS process without a
// fleet (one voter, no control port), with the prometheus plugin:
//   - the control metrics follow its state;
//   - a control turned off keeps the answer through a reload and a SIGKILL;
//   - a reload whose rule the held state breaks is refused at the rule's line,
//     while the running configuration keeps answering and accepting changes;
//   - a change naming an unknown control is refused and changes nothing.
func TestControlsSingleInstanceReloadAndRestart(t *testing.T) {
	dir := t.TempDir()
	token := filepath.Join(dir, "api.token")
	if err := os.WriteFile(token, []byte("# operators\nalice "+ctlToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	port, api, mport := coretest.FreePort(t), coretest.FreePort(t), coretest.FreePort(t)
	corefile := func(rule string) string {
		return fmt.Sprintf(`example.org:%d {
	bind 127.0.0.1
	prometheus 127.0.0.1:%d
	healthroute {
		api 127.0.0.1:%d {
			token_file %s
		}
		check east control
		check west control
		controls {
			data_dir %s
			%s
		}
		record www.example.org. failover {
			primary   A 192.0.2.1 check east
			secondary A 198.51.100.1 check west
		}
	}
}`, port, mport, api, token, filepath.Join(dir, "state"), rule)
	}
	base := fmt.Sprintf("http://127.0.0.1:%d", api)
	srv := coretest.Start(t, corefile("assertion one-region 1 east west"), port, "www.example.org")
	is := func(want string) func(*dns.Msg) bool { return func(m *dns.Msg) bool { return firstA(m) == want } }
	var code int
	var body string
	waitUntil(t, 10*time.Second, "east off applies", func() bool {
		code, body = httpDo(t, http.MethodPost, base+"/v1/controls/east?reason=test", ctlToken, "off")
		return code == http.StatusOK
	}, func() string { return body })
	srv.WaitFor(t, "www.example.org", dns.TypeA, time.Second, "the secondary after east off", is(ctlSecondary))

	code, body = httpDo(t, http.MethodPost, base+"/v1/controls", ctlToken, `{"set": {"west": "off", "north": "off"}}`)
	if code != http.StatusNotFound || !strings.Contains(body, "unknown control 'north'") {
		t.Fatalf("a batch naming an unknown control: %d %s", code, body)
	}
	code, body = httpDo(t, http.MethodPost, base+"/v1/checks/west/override", ctlToken, "unhealthy")
	if code != http.StatusConflict || !strings.Contains(body, "check west is a routing control") {
		t.Fatalf("an override of a control's check: %d %s, want it refused", code, body)
	}
	var v ctlView
	getJSON(t, base+"/v1/controls", &v)
	if !v.on("west") || v.on("east") || v.Audit[0].Token != "alice" {
		t.Fatalf("after the refused batch: %+v, want west still on and alice's change last", v)
	}

	murl := fmt.Sprintf("http://127.0.0.1:%d/metrics", mport)
	fams, text := scrape(t, murl)
	for _, m := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"control_on", map[string]string{"control": "east"}, 0},
		{"control_on", map[string]string{"control": "west"}, 1},
		{"control_changes_total", nil, 1},
		{"control_refusals_total", map[string]string{"reason": "invalid"}, 2}, // the batch naming north, the override of west
		{"control_raft_leader", nil, 1},
		{"control_can_change", nil, 1},
		{"check_healthy", map[string]string{"check": "east"}, 0},
	} {
		if got := metricValue(fams, metricPrefix+m.name, m.labels); got != m.want {
			t.Errorf("%s%v = %v, want %v\n%s", m.name, m.labels, got, m.want, series(fams, metricPrefix+m.name))
		}
	}
	if !strings.Contains(text, metricPrefix+"control_raft_term ") || !strings.Contains(text, metricPrefix+"control_raft_commit_lag ") {
		t.Errorf("the raft term and commit lag are not exported:\n%s", text)
	}
	var list []*dto.MetricFamily // the exported families pass promlint, as scraped
	for _, mf := range fams {
		list = append(list, mf)
	}
	lintFamilies(t, list)

	srv.Reload(t, corefile("assertion both 2 east west"))
	waitUntil(t, 15*time.Second, "the reload is refused at the rule's line", func() bool {
		return strings.Contains(srv.Output(), "Corefile:12 - Error during parsing: controls: rule both (at least 2 of {east, west} on) is broken by the state held now (east off, west on)")
	}, srv.Output)
	if got := firstA(srv.Query(t, "www.example.org", dns.TypeA)); got != ctlSecondary {
		t.Fatalf("after the refused reload: %s, want the secondary", got)
	}
	code, body = httpDo(t, http.MethodPost, base+"/v1/controls/west", ctlToken, "off")
	if code != http.StatusConflict || !strings.Contains(body, "refused by rule one-region") {
		t.Fatalf("after the refused reload the running rules should apply: %d %s", code, body)
	}
	fams, _ = scrape(t, murl)
	if got := metricValue(fams, metricPrefix+"control_refusals_total", map[string]string{"reason": "one-region"}); got != 1 {
		t.Errorf("control_refusals_total{reason=one-region} = %v after one refusal, want 1", got)
	}

	if err := srv.Cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	pid := srv.Cmd.Process.Pid
	waitUntil(t, 5*time.Second, "the process exits", func() bool { return processGone(pid) }, func() string { return "" })
	srv = coretest.Start(t, corefile("assertion one-region 1 east west"), port, "www.example.org")
	if got := firstA(srv.Query(t, "www.example.org", dns.TypeA)); got != ctlSecondary {
		t.Fatalf("after a SIGKILL and restart: %s, want the secondary (east still off)", got)
	}

	// Break-glass: west off past one-region, logged as such.
	waitUntil(t, 10*time.Second, "west off with break-glass applies", func() bool {
		code, body = httpDo(t, http.MethodPost, base+"/v1/controls", ctlToken, `{"set": {"west": "off"}, "reason": "both regions down", "break_glass": ["one-region"]}`)
		return code == http.StatusOK
	}, func() string { return body })
	getJSON(t, base+"/v1/controls", &v)
	if v.on("west") || len(v.Audit) == 0 || len(v.Audit[0].BreakGlass) != 1 || v.Audit[0].BreakGlass[0] != "one-region" {
		t.Fatalf("after break-glass: %+v, want west off and the audit naming the rule bypassed", v)
	}
	if !strings.Contains(srv.Output(), "applied with break_glass one-region") {
		t.Errorf("the break-glass change is not logged as such:\n%s", srv.Output())
	}
}
