package test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/healthroute/healthroute/internal/coretest"
)

// TestControlsDamagedLogIsRefusedAtTheCorefileLine: a raft log with a damaged
// entry (a byte of a change flipped on disk), then a file that is no log at all:
// CoreDNS refuses to start, naming the controls block's line and the damage,
// never with a panic.
func TestControlsDamagedLogIsRefusedAtTheCorefileLine(t *testing.T) {
	dir := t.TempDir()
	token := filepath.Join(dir, "api.token")
	if err := os.WriteFile(token, []byte("ops "+ctlToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "state")
	port, api := coretest.FreePort(t), coretest.FreePort(t)
	corefile := fmt.Sprintf(`example.org:%d {
	bind 127.0.0.1
	healthroute {
		api 127.0.0.1:%d {
			token_file %s
		}
		check east control
		check west control
		controls {
			data_dir %s
		}
		record www.example.org. failover {
			primary   A 192.0.2.1 check east
			secondary A 198.51.100.1 check west
		}
	}
}`, port, api, token, data)
	srv := coretest.Start(t, corefile, port, "www.example.org")
	code, body := httpDo(t, http.MethodPost, fmt.Sprintf("http://127.0.0.1:%d/v1/controls/east?reason=damage-me", api), ctlToken, "off")
	if code != http.StatusOK {
		t.Fatalf("east off: %d %s", code, body)
	}
	srv.Stop()
	path := filepath.Join(srv.Dir, "Corefile")
	at := fmt.Sprintf("%s:9", path) // the controls block's line

	log := filepath.Join(data, "raft.db")
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	// Every copy: bbolt writes a changed page anew and leaves the old one in the
	// file, free, so the first copy found may not be the entry the log holds.
	if !bytes.Contains(b, []byte("damage-me")) {
		t.Fatal("the change's reason is not in raft.db")
	}
	b = bytes.ReplaceAll(b, []byte("damage-me"), []byte("Damage-me"))
	if err := os.WriteFile(log, b, 0o600); err != nil {
		t.Fatal(err)
	}
	refused := func(want string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, coretest.Binary(t), "-conf", path)
		cmd.Dir = t.TempDir() // a start that is not refused writes its default data_dir there
		out, err := cmd.CombinedOutput()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || ctx.Err() != nil {
			t.Fatalf("coredns: %v (want a refusal at startup)\n%s", err, out)
		}
		if !strings.Contains(string(out), at) || !strings.Contains(string(out), want) || strings.Contains(string(out), "panic") {
			t.Fatalf("output %q\nwant %q and %q, no panic", out, at, want)
		}
	}
	refused("controls: raft log: " + log + " is damaged: entry")
	if err := os.WriteFile(log, bytes.Repeat([]byte("not a log "), 1000), 0o600); err != nil {
		t.Fatal(err)
	}
	refused("controls: raft log: " + log + " is unreadable")
}
