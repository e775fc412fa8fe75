//go:build unix

package health

import "syscall"

// nofileLimit returns the process's soft limit on open file descriptors, 0 when
// unknown or unlimited (in effect). (The Go runtime raises the soft limit to the hard one at
// start-up.)
func nofileLimit() uint64 {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil || rl.Cur > 1<<40 {
		return 0
	}
	return uint64(rl.Cur)
}
