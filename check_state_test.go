package healthroute

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/healthroute/healthroute/health"
)

// TestDataDirParse: data_dir takes one directory this process can write to, once
// per block; anything else is refused naming the line.
func TestDataDirParse(t *testing.T) {
	dir := t.TempDir()
	cfg := mustParse(t, "healthroute example.org {\ndata_dir "+dir+"\n}")
	if cfg.DataDir != dir {
		t.Fatalf("data_dir %s parsed as %q", dir, cfg.DataDir)
	}
	checkParseErrors(t, []parseErrorCase{
		{"missing", "healthroute example.org {\ndata_dir " + filepath.Join(dir, "nosuch") + "\n}", 2,
			"data_dir: " + filepath.Join(dir, "nosuch") + " is not a directory this process can write to"},
		{"twice", "healthroute example.org {\ndata_dir " + dir + "\ndata_dir " + dir + "\n}", 3, "data_dir"},
		{"no value", "healthroute example.org {\ndata_dir\n}", 2, "Wrong argument count"},
	})
}

// TestCheckStatesSurviveTheKeeper: what one keeper saves, the next loads; a check no
// block holds keeps its saved state while it is fresh; a damaged file is an error
// that starts every check as new, never a failed start.
func TestCheckStatesSurviveTheKeeper(t *testing.T) {
	dir := t.TempDir()
	sched := &health.Scheduler{}
	sp := &health.Spec{Name: "web", Type: health.TCP, Target: "127.0.0.1:9", Interval: time.Hour, Fails: 3, Passes: 3}
	sp.Seal()
	judged := time.Now().Add(-time.Minute).Round(0)
	gone := map[string]health.Saved{"released-check": {Down: true, Judged: judged}}
	if err := os.WriteFile(filepath.Join(dir, checkStateFile), []byte(`{"version":1,"checks":{"`+sp.Fingerprint()+`":{"down":true,"judged":"`+judged.Format(time.RFC3339Nano)+`"},"released-check":{"down":true,"judged":"`+judged.Format(time.RFC3339Nano)+`"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	k := startStateKeeper(sched, dir)
	sched.Acquire([]*health.Spec{sp})
	if st := sched.Snapshot().Status(sp.Fingerprint()); !st.Down {
		t.Fatalf("the saved state was not restored: %+v", st)
	}
	k.note()
	sched.Release([]*health.Spec{sp})
	k.close()

	got, err := loadCheckStates(dir)
	if err != nil {
		t.Fatal(err)
	}
	if s := got[sp.Fingerprint()]; !s.Down || !s.Judged.Equal(judged) {
		t.Errorf("after a keeper's close the check is saved as %+v; want down, judged %v", s, judged)
	}
	if s := got["released-check"]; !s.Down || !s.Judged.Equal(gone["released-check"].Judged) {
		t.Errorf("a fresh state of a check no block holds was dropped: %+v", got)
	}

	if err := os.WriteFile(filepath.Join(dir, checkStateFile), []byte(`{"version":1,"checks":`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := loadCheckStates(dir); err == nil || !strings.Contains(err.Error(), checkStateFile) {
		t.Errorf("a damaged state file loads with error %v; want one naming the file", err)
	}
	k = startStateKeeper(&health.Scheduler{}, dir) // logs, starts empty
	k.close()
	if got, err := loadCheckStates(dir); err != nil || len(got) != 0 {
		t.Errorf("after a start over a damaged file, the keeper saved %v (%v); want an empty, readable file", got, err)
	}
}
