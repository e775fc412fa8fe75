//go:build linux

package coretest

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
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

// CPU returns the CPU time (user and system) process pid has used, from
// /proc/PID/stat, in clock ticks of 10 ms.
func CPU(t testing.TB, pid int) time.Duration {
	t.Helper()
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+2:])) // fields from the 3rd on
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(utime+stime) * time.Second / 100 // USER_HZ
}

// Memory returns process pid's resident set size now (VmRSS) and its peak (VmHWM),
// in bytes, from /proc/PID/status.
func Memory(t testing.TB, pid int) (rss, hwm int64) {
	t.Helper()
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(status), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		kb, _ := strconv.ParseInt(f[1], 10, 64)
		switch f[0] {
		case "VmRSS:":
			rss = kb << 10
		case "VmHWM:":
			hwm = kb << 10
		}
	}
	if rss == 0 || hwm == 0 {
		t.Fatalf("/proc/%d/status has no VmRSS or VmHWM", pid)
	}
	return rss, hwm
}
