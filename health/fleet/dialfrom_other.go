//go:build !linux

package fleet

import "syscall"

// dialFromControl: elsewhere a connection dialled from a given address takes its
// port when it binds.
func dialFromControl(_, _ string, _ syscall.RawConn) error { return nil }
