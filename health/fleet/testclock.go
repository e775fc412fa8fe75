//go:build healthroute_testclock

package fleet

import (
	"os"
	"time"
)

// In binaries built with the healthroute_testclock tag (internal/coretest builds
// the end-to-end tests' CoreDNS so, and nothing else does),
// HEALTHROUTE_TEST_CLOCK_OFFSET (a Go duration such as -1h) sets this member's
// wall clock off by that much, as a host whose clock is wrong: the tests show the
// others count it all the same.
func init() {
	if d, err := time.ParseDuration(os.Getenv("HEALTHROUTE_TEST_CLOCK_OFFSET")); err == nil {
		wallOffset = d
	}
}
