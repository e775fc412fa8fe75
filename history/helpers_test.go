package history

import (
	"os"
	"path/filepath"
	"testing"
)

// writeFile writes content as the history file in dir.
func writeFile(t *testing.T, dir, content string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, FileName), []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}
