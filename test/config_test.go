package test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/healthroute/healthroute/internal/coretest"
)

// TestConfigRefusedByBinary: CoreDNS refuses to start on each Corefile that used to be
// accepted and half applied (or that held a bad number), naming the Corefile's path
// and line and what was expected.
func TestConfigRefusedByBinary(t *testing.T) {
	bin := coretest.Binary(t)
	dir := t.TempDir()
	table := filepath.Join(dir, "latency.csv")
	if err := os.WriteFile(table, []byte("192.0.2.0/24,r,NaN\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	short := filepath.Join(dir, "short.token")
	if err := os.WriteFile(short, []byte("tooshort\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	const record = "record a.example.org. simple {\nA 192.0.2.1\n}\n"
	for _, tc := range []struct {
		name, block string
		line        int
		want        string
	}{
		{"second healthroute", "healthroute {\n" + record + "}\nhealthroute {\n}\n", 7, "healthroute is given twice in this server block"},
		{"ttl twice", "healthroute {\nttl 5\nttl 6\n}\n", 4, "ttl is given twice (first at line 3)"},
		{"interval on calculated", "healthroute {\ncheck x tcp 127.0.0.1:1\ncheck c calculated x {\ninterval 10s\n}\n}\n", 5, "interval applies to http, https, tcp, websocket, grpc and prometheus checks only, not calculated"},
		{"NaN region", "healthroute {\nregion r NaN NaN\n}\n", 3, "invalid coordinates 'NaN NaN'"},
		{"NaN latency cell", "healthroute {\nregion r 1 2\nlatency_table " + table + "\n" + record + "}\n", 4, table + ":1: invalid milliseconds 'NaN'"},
		{"short token", "healthroute {\napi 127.0.0.1:1 {\ntoken_file " + short + "\n}\n}\n", 4, "expected at least 16"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "Corefile")
			corefile := "example.org:1 {\n" + tc.block + "}\n"
			if err := os.WriteFile(path, []byte(corefile), 0o644); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			out, err := exec.CommandContext(ctx, bin, "-conf", path).CombinedOutput()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || ctx.Err() != nil {
				t.Fatalf("coredns: %v (want a refusal at startup)\n%s", err, out)
			}
			loc := fmt.Sprintf("%s:%d", path, tc.line)
			if !strings.Contains(string(out), loc) || !strings.Contains(string(out), tc.want) {
				t.Errorf("output %q\nwant it to contain %q and %q", out, loc, tc.want)
			}
		})
	}
}

// TestConfigAliasChainByBinary: a 10,000-deep alias chain starts and answers its head
// with the tail's address under the head's name.
func TestConfigAliasChainByBinary(t *testing.T) {
	const depth = 10_000
	var b strings.Builder
	port := coretest.FreePort(t)
	fmt.Fprintf(&b, "example.org:%d {\nbind 127.0.0.1\nhealthroute {\n", port)
	for i := range depth - 1 {
		fmt.Fprintf(&b, "record r%d.example.org. simple {\nalias r%d.example.org.\n}\n", i, i+1)
	}
	fmt.Fprintf(&b, "record r%d.example.org. simple {\nA 192.0.2.1\n}\n}\n}\n", depth-1)
	s := coretest.Start(t, b.String(), port, "r0.example.org.")
	for _, name := range []string{"r0.example.org.", "r5000.example.org."} {
		r := s.Query(t, name, dns.TypeA)
		if len(r.Answer) != 1 || r.Answer[0].Header().Name != name || r.Answer[0].(*dns.A).A.String() != "192.0.2.1" {
			t.Errorf("%s: %v, want 192.0.2.1 owned by %s", name, r.Answer, name)
		}
	}
}
