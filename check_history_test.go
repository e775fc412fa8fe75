package healthroute

import (
	"path/filepath"
	"testing"
)

// TestHistoryDirParse: history_dir takes one directory this process can write to,
// once per api block; anything else is refused naming the line.
func TestHistoryDirParse(t *testing.T) {
	dir := t.TempDir()
	cfg := mustParse(t, "healthroute example.org {\napi 127.0.0.1:8053 {\nhistory_dir "+dir+"\n}\n}")
	if cfg.API == nil || cfg.API.HistoryDir != dir {
		t.Fatalf("history_dir %s parsed as %+v", dir, cfg.API)
	}
	checkParseErrors(t, []parseErrorCase{
		{"missing", "healthroute example.org {\napi 127.0.0.1:8053 {\nhistory_dir " + filepath.Join(dir, "nosuch") + "\n}\n}", 3,
			"history_dir: " + filepath.Join(dir, "nosuch") + " is not a directory this process can write to"},
		{"twice", "healthroute example.org {\napi 127.0.0.1:8053 {\nhistory_dir " + dir + "\nhistory_dir " + dir + "\n}\n}", 4, "history_dir"},
		{"no value", "healthroute example.org {\napi 127.0.0.1:8053 {\nhistory_dir\n}\n}", 3, "Wrong argument count"},
	})
}
