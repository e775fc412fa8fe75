package test

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/healthroute/healthroute/internal/coretest"
)

// TestFailedReloadLeavesNothing: a reload whose second server block cannot
// start (its api address is taken) keeps the running configuration, and nothing
// of the first block it had already started stays behind: its new check does not
// show on the API the running block shares with it.
func TestFailedReloadLeavesNothing(t *testing.T) {
	ok := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer ok.Close()
	held, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	port, api := coretest.FreePort(t), coretest.FreePort(t)
	first := func(extra string) string {
		return fmt.Sprintf(`example.org:%d {
	bind 127.0.0.1
	healthroute {
		api 127.0.0.1:%d
		%s
		record www.example.org. simple {
			A 192.0.2.1
		}
		%s
	}
}
`, port, api, fastCheck("web", ok.URL+"/"), extra)
	}
	srv := coretest.Start(t, first(""), port, "www.example.org")
	base := fmt.Sprintf("http://127.0.0.1:%d", api)
	waitUntil(t, 10*time.Second, "the api lists check web", func() bool { _, ok := apiChecks(t, base)["web"]; return ok }, srv.Output)

	srv.Reload(t, first(fastCheck("extra", ok.URL+"/extra"))+fmt.Sprintf(`example.net:%d {
	bind 127.0.0.1
	healthroute {
		api %s
		record www.example.net. simple {
			A 192.0.2.9
		}
	}
}
`, port, held.Addr()))
	waitUntil(t, 15*time.Second, "the reload fails", func() bool { return strings.Contains(srv.Output(), "Restart failed") }, srv.Output)
	checks := apiChecks(t, base)
	if _, leaked := checks["extra"]; leaked {
		t.Errorf("after the failed reload the api lists check extra of the discarded instance\n%s", srv.Output())
	}
	if _, kept := checks["web"]; !kept {
		t.Errorf("after the failed reload the api lost check web of the running instance\n%s", srv.Output())
	}
}
