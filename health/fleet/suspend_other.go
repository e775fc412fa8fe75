//go:build !linux

package fleet

import "time"

// hostSuspended is how long the host has been suspended since it booted: not
// known on this system (a suspend then goes unnoticed, see stallLocked).
func hostSuspended() time.Duration { return 0 }
