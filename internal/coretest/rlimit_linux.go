//go:build linux

package coretest

import (
	"fmt"
	"os"
	"syscall"
	"unsafe"
)

// Prlimit sets the open-file limits of process pid to lim (nil: leaves them) and
// returns the limits it had, as prlimit(1) does: a test lowers a running server's
// `ulimit -n` with it.
func Prlimit(pid int, lim *syscall.Rlimit) (syscall.Rlimit, error) {
	var old syscall.Rlimit
	_, _, errno := syscall.RawSyscall6(syscall.SYS_PRLIMIT64, uintptr(pid), syscall.RLIMIT_NOFILE,
		uintptr(unsafe.Pointer(lim)), uintptr(unsafe.Pointer(&old)), 0, 0)
	if errno != 0 {
		return old, errno
	}
	return old, nil
}

// OpenFiles counts the open file descriptors of process pid; -1 when /proc does not
// list them.
func OpenFiles(pid int) int {
	es, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return -1
	}
	return len(es)
}
