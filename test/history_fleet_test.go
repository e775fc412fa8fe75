package test

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/healthroute/healthroute/internal/coretest"
	"github.com/healthroute/healthroute/view"
)

// TestHistoryNamesFleetMembers runs two real CoreDNS processes in one fleet against
// an endpoint that answers each checker by the name in its User-Agent: when both see
// it fail, the change to unhealthy in the history names both members; when one sees
// it pass again (one of two is more than the default 18% quorum), the change to
// healthy names that one.
func TestHistoryNamesFleetMembers(t *testing.T) {
	var mu sync.Mutex
	up := map[string]bool{"dns-a": true, "dns-b": true}
	endpoint := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		for name, healthy := range up {
			if strings.HasSuffix(r.UserAgent(), "(checker "+name+")") && healthy {
				fmt.Fprint(w, "OK")
				return
			}
		}
		http.Error(w, "down for you", http.StatusServiceUnavailable)
	}))
	t.Cleanup(endpoint.Close)
	key := make([]byte, 32)
	rand.Read(key)
	keyFile := coretest.WriteFile(t, "gossip.key", base64.StdEncoding.EncodeToString(key)+"\n")
	gossipA, gossipB := coretest.FreePort(t), coretest.FreePort(t)
	corefile := func(name string, port, api, bind, join int) string {
		return fmt.Sprintf(`example.org:%d {
	bind 127.0.0.1
	healthroute {
		api 127.0.0.1:%d
		fleet {
			bind 127.0.0.1:%d
			join 127.0.0.1:%d
			name %s
			key_file %s
		}
		%s
		record www.example.org. failover {
			primary   A 192.0.2.1 check web
			secondary A 198.51.100.1
		}
	}
}`, port, api, bind, join, name, keyFile, fastCheck("web", endpoint.URL+"/"))
	}
	portA, portB, apiA, apiB := coretest.FreePort(t), coretest.FreePort(t), coretest.FreePort(t), coretest.FreePort(t)
	a := coretest.Start(t, corefile("dns-a", portA, apiA, gossipA, gossipB), portA, "www.example.org")
	coretest.Start(t, corefile("dns-b", portB, apiB, gossipB, gossipA), portB, "www.example.org")
	base := fmt.Sprintf("http://127.0.0.1:%d", apiA)
	waitUntil(t, 20*time.Second, "dns-a counts both members", func() bool {
		f := apiChecks(t, base)["web"].Fleet
		return f != nil && f.Total == 2
	}, a.Output)
	history := func() view.History {
		var h view.History
		getJSON(t, base+"/v1/checks/web/history", &h)
		return h
	}
	setUp := func(a, b bool) { mu.Lock(); up["dns-a"], up["dns-b"] = a, b; mu.Unlock() }

	setUp(false, false)
	waitUntil(t, 20*time.Second, "a change to unhealthy", func() bool { return len(history().Changes) == 1 },
		func() string { return fmt.Sprintf("%+v\n%s", history(), a.Output()) })
	if c := history().Changes[0]; c.To != "unhealthy" || strings.Join(c.Members, " ") != "dns-a dns-b" {
		t.Errorf("change to unhealthy %+v, want it seen by dns-a and dns-b", c)
	}
	setUp(false, true)
	waitUntil(t, 20*time.Second, "a change to healthy", func() bool { return len(history().Changes) == 2 },
		func() string { return fmt.Sprintf("%+v\n%s", history(), a.Output()) })
	if c := history().Changes[1]; c.To != "healthy" || strings.Join(c.Members, " ") != "dns-b" {
		t.Errorf("change to healthy %+v, want it seen by dns-b alone", c)
	}
}
