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

// TestReadTokens: one token per line, bare (named "token", the original format) or
// NAME TOKEN; comments and blank lines skipped; a line of three fields refused.
func TestReadTokens(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "tokens")
	if err := os.WriteFile(p, []byte("# operators\nalice 0123456789abcdef\n\n  runbook fedcba9876543210  \n"), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := ReadTokens(p)
	if err != nil || len(got) != 2 || got[0] != (Token{"alice", "0123456789abcdef"}) || got[1] != (Token{"runbook", "fedcba9876543210"}) {
		t.Errorf("ReadTokens = %v, %v; want alice and runbook", got, err)
	}
	os.WriteFile(p, []byte("0123456789abcdef\n"), 0o600)
	if got, err := ReadTokens(p); err != nil || len(got) != 1 || got[0] != (Token{"token", "0123456789abcdef"}) {
		t.Errorf("a bare token: %v, %v; want it named token", got, err)
	}
	os.WriteFile(p, []byte("a b c\n"), 0o600)
	if _, err := ReadTokens(p); err == nil || !strings.Contains(err.Error(), "expected TOKEN or NAME TOKEN") {
		t.Errorf("a line of three fields: %v", err)
	}
	// One token under two names would put one holder's changes in the other's name
	// in the audit.
	os.WriteFile(p, []byte("alice 0123456789abcdef\nbob 0123456789abcdef\n"), 0o600)
	if _, err := ReadTokens(p); err == nil || !strings.Contains(err.Error(), "under the names alice and bob") {
		t.Errorf("one token under two names: %v", err)
	}
}
