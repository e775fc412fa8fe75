//go:build linux

package health

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"os"
	"syscall"
	"time"
	"unsafe"
)

// streamTarget is an IP address and port as streamDial connects to it, prepared
// once for a check's probes. One probe at a time uses it (connect writes into sa).
type streamTarget struct {
	family int
	sa     syscall.Sockaddr
	raddr  *net.TCPAddr
	name   string // the connection's name in errors: "tcp ADDR"
}

func newStreamTarget(ap netip.AddrPort) *streamTarget {
	t := &streamTarget{family: syscall.AF_INET, raddr: net.TCPAddrFromAddrPort(ap), name: "tcp " + ap.String()}
	if ap.Addr().Is6() {
		t.family, t.sa = syscall.AF_INET6, &syscall.SockaddrInet6{Port: int(ap.Port()), Addr: ap.Addr().As16()}
	} else {
		t.sa = &syscall.SockaddrInet4{Port: int(ap.Port()), Addr: ap.Addr().As4()}
	}
	return t
}

// streamDial connects a non-blocking TCP socket to t, by deadline (zero: none)
// and before ctx ends, and hands it to the runtime's poller as an *os.File, which
// reads, writes, closes and keeps deadlines as a net.Conn does. It makes the system
// calls a probe needs, where net.Dialer makes four more for a connection a probe
// writes once, reads and closes: the local and the peer's address (getsockname,
// getpeername: a probe asks for neither), and TCP_NODELAY (a probe's request is
// one write, sent at once with Nagle's algorithm on or off). Its errors read as
// net.Dialer's: "dial tcp ADDR: connect: connection refused", "dial tcp ADDR: i/o
// timeout".
func streamDial(ctx context.Context, t *streamTarget, deadline time.Time) (net.Conn, error) {
	fail := func(err error) error { return &net.OpError{Op: "dial", Net: "tcp", Addr: t.raddr, Err: err} }
	if err := ctx.Err(); err != nil {
		return nil, fail(ctxErr(err))
	}
	if !deadline.IsZero() && !time.Now().Before(deadline) {
		return nil, fail(dialTimeout{})
	}
	fd, err := syscall.Socket(t.family, syscall.SOCK_STREAM|syscall.SOCK_NONBLOCK|syscall.SOCK_CLOEXEC, syscall.IPPROTO_TCP)
	if err != nil {
		return nil, fail(os.NewSyscallError("socket", err))
	}
	for {
		err = syscall.Connect(fd, t.sa)
		if err != syscall.EINTR {
			break
		}
	}
	switch err {
	case nil, syscall.EINPROGRESS, syscall.EALREADY:
	default:
		syscall.Close(fd)
		return nil, fail(os.NewSyscallError("connect", err))
	}
	f := os.NewFile(uintptr(fd), t.name)
	// In progress. To a loopback or local address the handshake is over before
	// connect returns: the socket's having a peer says so without waiting.
	if err != nil && !hasPeer(fd) {
		if err := waitConnected(ctx, f, deadline); err != nil {
			f.Close()
			return nil, fail(err)
		}
	}
	return &streamConn{File: f, raddr: t.raddr}, nil
}

// hasPeer reports whether socket fd is connected (getpeername succeeds), without
// the allocation of syscall.Getpeername's result.
func hasPeer(fd int) bool {
	var rsa syscall.RawSockaddrAny
	n := uint32(syscall.SizeofSockaddrAny)
	_, _, e := syscall.RawSyscall(syscall.SYS_GETPEERNAME, uintptr(fd), uintptr(unsafe.Pointer(&rsa)), uintptr(unsafe.Pointer(&n)))
	return e == 0
}

// waitConnected waits until f's connect is over, deadline passes (zero: never) or
// ctx ends, and returns its error.
func waitConnected(ctx context.Context, f *os.File, deadline time.Time) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	if dl, ok := ctx.Deadline(); ok && (deadline.IsZero() || dl.Before(deadline)) {
		deadline = dl
	}
	if !deadline.IsZero() {
		f.SetWriteDeadline(deadline)
	}
	stop := context.AfterFunc(ctx, func() { f.SetWriteDeadline(time.Unix(1, 0)) })
	var connErr error
	// Each call, the first before any wait, asks the socket whether the connect is
	// over: the poller may have seen the socket writable before this wait began.
	err = rc.Write(func(fd uintptr) bool {
		n, err := syscall.GetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_ERROR)
		if err != nil {
			connErr = os.NewSyscallError("getsockopt", err)
			return true
		}
		switch e := syscall.Errno(n); e {
		case 0:
			return hasPeer(int(fd)) // else still connecting
		case syscall.EINPROGRESS, syscall.EALREADY, syscall.EINTR:
			return false
		default:
			connErr = os.NewSyscallError("connect", e)
			return true
		}
	})
	if !stop() && ctx.Err() != nil {
		// ctx ended: report it as net.Dialer does, also when the connect
		// completed as it ended.
		return ctxErr(ctx.Err())
	}
	if err != nil {
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return dialTimeout{}
		}
		return err
	}
	f.SetWriteDeadline(time.Time{})
	return connErr
}

// streamConn is a connected TCP socket read and written through the poller.
type streamConn struct {
	*os.File
	raddr *net.TCPAddr
}

func (c *streamConn) RemoteAddr() net.Addr { return c.raddr }

func (c *streamConn) LocalAddr() net.Addr {
	rc, err := c.SyscallConn()
	if err != nil {
		return nil
	}
	var la net.Addr
	rc.Control(func(fd uintptr) {
		switch sa, _ := syscall.Getsockname(int(fd)); sa := sa.(type) {
		case *syscall.SockaddrInet4:
			la = &net.TCPAddr{IP: net.IP(sa.Addr[:]).To16(), Port: sa.Port}
		case *syscall.SockaddrInet6:
			la = &net.TCPAddr{IP: net.IP(sa.Addr[:]), Port: sa.Port}
		}
	})
	return la
}
