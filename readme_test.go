package healthroute

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/coredns/caddy"
)

// TestReadmeExamples parses every `~~~ corefile` block of README.md and of the pages
// in docs/.
func TestReadmeExamples(t *testing.T) {
	docs, err := filepath.Glob("docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	inner := regexp.MustCompile(`(?s)\n    (healthroute .*?\n    })\n`)
	for _, file := range append([]string{"README.md"}, docs...) {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		blocks := regexp.MustCompile("(?s)~~~ corefile\n(.*?)~~~").FindAllSubmatch(b, -1)
		if file == "README.md" && len(blocks) == 0 {
			t.Fatal("README.md has no corefile examples")
		}
		for i, blk := range blocks {
			m := inner.FindSubmatch(blk[1])
			if m == nil {
				t.Fatalf("%s example %d: no healthroute block found", file, i)
			}
			c := caddy.NewTestController("dns", string(m[1]))
			c.ServerBlockKeys = []string{strings.Fields(string(blk[1]))[0]} // the server block's zone
			if _, err := parse(c, nil); err != nil {
				t.Errorf("%s example %d: %v", file, i, err)
			}
		}
	}
}

// TestReadmeLinks checks that README.md is short enough to read through, that every
// page in docs/ is linked from it, and that every relative link of README and the
// pages names a file that exists.
func TestReadmeLinks(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(readme), "\n"); n > 500 {
		t.Errorf("README.md has %d lines; keep it under 500 and move references to docs/", n)
	}
	docs, err := filepath.Glob("docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range docs {
		if !strings.Contains(string(readme), "("+d+")") {
			t.Errorf("README.md does not link %s", d)
		}
	}
	link := regexp.MustCompile(`\]\(([^)#:]+)(#[^)]*)?\)`)
	for _, file := range append([]string{"README.md"}, docs...) {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range link.FindAllStringSubmatch(string(b), -1) {
			if _, err := os.Stat(filepath.Join(filepath.Dir(file), m[1])); err != nil {
				t.Errorf("%s links %s, which does not exist", file, m[1])
			}
		}
	}
}

// TestCorefileExample parses the healthroute block of Corefile.example, which
// `make run` serves.
func TestCorefileExample(t *testing.T) {
	b, err := os.ReadFile("Corefile.example")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?s)\n\s*(healthroute \{.*?\n    \})\n`).FindSubmatch(b)
	if m == nil {
		t.Fatal("Corefile.example has no healthroute block")
	}
	c := caddy.NewTestController("dns", string(m[1]))
	c.ServerBlockKeys = []string{"example.org.:1053"}
	cfg, err := parse(c, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Records) == 0 || len(cfg.Checks) == 0 {
		t.Errorf("parsed %d records and %d checks, want some of each", len(cfg.Records), len(cfg.Checks))
	}
}
