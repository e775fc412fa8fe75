package control

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// lockDir takes the data directory's lock file, refusing a directory another
// process holds: two members on one directory would corrupt each other's log.
func lockDir(dir string) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(dir, "lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("data directory: %v", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, fmt.Errorf("data directory %s is in use by another process (%v): give each member its own data_dir", dir, err)
	}
	return f, nil
}
