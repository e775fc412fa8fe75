//go:build !unix

package health

// nofileLimit returns 0: no file descriptor limit is known on this system.
func nofileLimit() uint64 { return 0 }
