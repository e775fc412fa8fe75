package health

import (
	"context"
	"net"
)

type tcpChecker struct{ addr *probeAddr }

func newTCPChecker(spec *Spec) (Checker, error) {
	if _, _, err := net.SplitHostPort(spec.Target); err != nil {
		return nil, err
	}
	return tcpChecker{addr: newProbeAddr(spec.Target)}, nil
}

// Check passes when a TCP connection is established before ctx ends (the scheduler
// gives it the check's timeout, 10 s by default as on Route 53).
func (t tcpChecker) Check(ctx context.Context) error {
	c, err := traceFrom(ctx).dialProbe(ctx, t.addr, 0)
	if err != nil {
		return err
	}
	return c.Close()
}
