package healthroute

import (
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// defaultDataDir is the directory, under the server's root beside the controls'
// defaultControlsDir, that keeps the checks' judged states and histories when the
// block names no data_dir and its api no history_dir.
const defaultDataDir = "healthroute-data"

// warnedDataDirs holds the default data directories whose warning was logged.
var warnedDataDirs sync.Map

// dataDirs returns where cfg's block keeps the checks' judged states and (with an
// api) their histories: the data_dir and history_dir it names, else the default
// data directory under the server's root, created when missing. A default that
// cannot be written is not used, and a warning says so (once per directory): the
// states and histories are then kept in memory only. This package's own tests get
// no default (it would carry states from one test to the next).
func (cfg *blockConfig) dataDirs() (states, histories string) {
	states = cfg.DataDir
	if cfg.API != nil {
		histories = cfg.API.HistoryDir
	}
	if states != "" && (cfg.API == nil || histories != "") || cfg.controlsDir == "" || testing.Testing() {
		return states, histories
	}
	def := filepath.Join(filepath.Dir(cfg.controlsDir), defaultDataDir)
	err := os.MkdirAll(def, 0o750)
	if err == nil {
		err = writableDir(def)
	}
	if err != nil {
		if _, warned := warnedDataDirs.LoadOrStore(def, true); !warned {
			log.Warningf("the default data directory %s cannot be written (%v): the checks' judged states and histories are kept in memory only, so a restarted process answers as if every check were new until its first threshold window, even during an outage; give data_dir (and the api's history_dir) a directory this process can write to", def, err)
		}
		return states, histories
	}
	if states == "" {
		states = def
	}
	if cfg.API != nil && histories == "" {
		histories = def
	}
	return states, histories
}

// writableDir reports why this process cannot create a file in dir, if it cannot.
func writableDir(dir string) error {
	f, err := os.CreateTemp(dir, ".healthroute-write-test-*")
	if err != nil {
		return err
	}
	f.Close()
	return os.Remove(f.Name())
}
