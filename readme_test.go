package healthroute

import (
	"os"
	"regexp"
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
	inner := regexp.MustCompile(`(?s)\n\s*(healthroute.*\n\s*})\s*\n}\s*$`)
	for i, blk := range blocks {
		m := inner.FindSubmatch(blk[1])
		if m == nil {
			t.Fatalf("example %d: no healthroute block found", i)
		}
		c := caddy.NewTestController("dns", string(m[1]))
		c.ServerBlockKeys = []string{"example.org."}
		if _, err := parse(c); err != nil {
			t.Errorf("example %d: %v", i, err)
		}
	}
}
