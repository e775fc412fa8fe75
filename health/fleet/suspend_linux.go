package fleet

import (
	"time"

	"golang.org/x/sys/unix"
)

// hostSuspended is how long the host has been suspended since it booted: Linux's
// boot clock counts a suspend, its monotonic clock (Go's) does not, and neither
// moves with the wall clock, so an NTP step does not show here.
func hostSuspended() time.Duration {
	var boot, mono unix.Timespec
	if unix.ClockGettime(unix.CLOCK_BOOTTIME, &boot) != nil || unix.ClockGettime(unix.CLOCK_MONOTONIC, &mono) != nil {
		return 0
	}
	return max(time.Duration(boot.Nano()-mono.Nano()), 0)
}
