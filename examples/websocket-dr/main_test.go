package websocketdr_test

import (
	"testing"

	"github.com/healthroute/healthroute/internal/coretest"
)

// TestMain removes the CoreDNS binary the tests built once they have run.
func TestMain(m *testing.M) { coretest.Main(m) }
