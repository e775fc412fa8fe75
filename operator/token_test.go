package operator

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadToken: the token is the file trimmed of white space, and a file over the
// bound is refused rather than read whole.
func TestReadToken(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	if got, err := ReadToken(write("ok", "  0123456789abcdef\n")); err != nil || got != "0123456789abcdef" {
		t.Errorf("ReadToken = %q, %v; want the trimmed token", got, err)
	}
	if got, err := ReadToken(write("edge", strings.Repeat("a", maxTokenFile))); err != nil || len(got) != maxTokenFile {
		t.Errorf("a file of exactly %d bytes: len %d, %v; want it read", maxTokenFile, len(got), err)
	}
	if _, err := ReadToken(write("big", strings.Repeat("a", maxTokenFile+1))); err == nil || !strings.Contains(err.Error(), "over 4096 bytes") {
		t.Errorf("a file over the bound: err %v, want it refused", err)
	}
	if _, err := ReadToken(filepath.Join(dir, "missing")); err == nil {
		t.Error("a missing file: no error")
	}
}
