package health

import (
	"net"
	"testing"

	"github.com/healthroute/healthroute/internal/coretest"
)

func TestTCP(t *testing.T) {
	open := rawServer(t, func(c net.Conn, done <-chan struct{}) {})
	tests := []struct {
		name, target, want string
	}{
		{"listener", open, ""},
		{"closed port", coretest.ClosedPort(t), "refused"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err, _ := probeOnce(t, &Spec{Name: "t", Type: TCP, Target: tc.target})
			wantResult(t, err, tc.want)
		})
	}
	if _, err := NewChecker(&Spec{Type: TCP, Target: "no-port"}, testAgent); err == nil {
		t.Error("NewChecker accepted a tcp target without a port")
	}
}
