package watch

import (
	"os"
	"syscall"
)

// identify adds the device, inode and status-change time to s.
func identify(s *Stamp, fi os.FileInfo) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return
	}
	s.Dev, s.Ino = uint64(st.Dev), st.Ino
	s.Change = st.Ctim.Nano()
}
