package healthroute

import "github.com/healthroute/healthroute/internal/coretest"

// waitUntil polls a condition until it holds or the test fails (coretest.WaitUntil).
var waitUntil = coretest.WaitUntil
