package test

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/healthroute/healthroute/internal/coretest"
)

// TestControlsSingleInstanceAcceptsAnOverrideOnItsFirstReady: one CoreDNS process
// with controls and no fleet (one voter), at the default timers. A script that
// starts the server and waits for ready can change the state at once: an override
// POSTed on the first 200 of /ready is applied (200), 20 starts in a row, half of
// them with a new data directory (the voter bootstraps) and half restarting on
// the previous one.
func TestControlsSingleInstanceAcceptsAnOverrideOnItsFirstReady(t *testing.T) {
	dir := t.TempDir()
	token := filepath.Join(dir, "api.token")
	if err := os.WriteFile(token, []byte("ops "+ctlToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// The check's interval (10 s by default) only sets when ready first answers (once
	// every check has a result); the controls' timers are the defaults.
	target := coretest.Acceptor(t)
	for run := range 20 {
		port, api, ready := coretest.FreePort(t), coretest.FreePort(t), coretest.FreePort(t)
		corefile := fmt.Sprintf(`example.org:%d {
	bind 127.0.0.1
	ready 127.0.0.1:%d
	healthroute {
		api 127.0.0.1:%d {
			token_file %s
		}
		check east control
		check web tcp %s {
			interval 1s
		}
		controls {
			data_dir %s
		}
		record www.example.org. failover {
			primary   A 192.0.2.1 check web
			secondary A 198.51.100.1 check east
		}
	}
}`, port, ready, api, token, target, filepath.Join(dir, fmt.Sprintf("state-%d", run/2)))
		srv := coretest.Start(t, corefile, port, "www.example.org")
		readyURL := fmt.Sprintf("http://127.0.0.1:%d/ready", ready)
		waitUntil(t, 10*time.Second, "ready answers 200", func() bool {
			resp, err := http.Get(readyURL)
			if err != nil {
				return false
			}
			resp.Body.Close()
			return resp.StatusCode == http.StatusOK
		}, srv.Output)
		state := []string{"healthy", "unhealthy"}[run%2]
		code, body := httpDo(t, http.MethodPost, fmt.Sprintf("http://127.0.0.1:%d/v1/checks/web/override", api), ctlToken, state)
		if code != http.StatusOK {
			t.Fatalf("run %d: override %s on the first 200 of ready: %d %s\n%s", run, state, code, body, srv.Output())
		}
		srv.Stop()
	}
}
