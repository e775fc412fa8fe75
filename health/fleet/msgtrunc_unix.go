//go:build unix

package fleet

import "syscall"

// msgTrunc is the flag of a datagram longer than the buffer it was read into.
const msgTrunc = syscall.MSG_TRUNC
