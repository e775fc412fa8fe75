package healthroute

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/coredns/caddy"
)

// TestReadmeExamples parses every `~~~ corefile` block of README.md.
func TestReadmeExamples(t *testing.T) {
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := regexp.MustCompile("(?s)~~~ corefile\n(.*?)~~~").FindAllSubmatch(b, -1)
	if len(blocks) == 0 {
		t.Fatal("README.md has no corefile examples")
	}
	inner := regexp.MustCompile(`(?s)\n    (healthroute .*?\n    })\n`)
	for i, blk := range blocks {
		m := inner.FindSubmatch(blk[1])
		if m == nil {
			t.Fatalf("example %d: no healthroute block found", i)
		}
		c := caddy.NewTestController("dns", string(m[1]))
		c.ServerBlockKeys = []string{strings.Fields(string(blk[1]))[0]} // the server block's zone
		if _, err := parse(c); err != nil {
			t.Errorf("example %d: %v", i, err)
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
	cfg, err := parse(c)
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Records) == 0 || len(cfg.Checks) == 0 {
		t.Errorf("parsed %d records and %d checks, want some of each", len(cfg.Records), len(cfg.Checks))
	}
}
