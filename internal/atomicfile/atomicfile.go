// Package atomicfile replaces files durably: a reader sees the old content or the
// new, never a part, and the new content survives a crash once Write returns.
package atomicfile

import (
	"os"
	"path/filepath"
)

// Write replaces path with b, durably: it writes b to path.tmp, syncs it, renames it
// over path and syncs the directory. The file gets mode perm when created.
func Write(path string, b []byte, perm os.FileMode) error {
	tmp := path + ".tmp"
	w, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, perm)
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	if err == nil {
		err = w.Sync()
	}
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err == nil {
		if d, derr := os.Open(filepath.Dir(path)); derr == nil {
			d.Sync()
			d.Close()
		}
	}
	if err != nil {
		os.Remove(tmp)
	}
	return err
}
