//go:build linux

package health

import (
	"context"
	"net"
	"net/netip"
	"os"
	"syscall"
	"time"
)

// streamDial connects a non-blocking TCP socket to ap and hands it to the runtime's
// poller as an *os.File, which reads, writes, closes and keeps deadlines as a
// net.Conn does. It makes the system calls a probe needs, where net.Dialer makes
// four more for a connection a probe writes once, reads and closes: the local and
// the peer's address (getsockname, getpeername: a probe asks for neither), and
// TCP_NODELAY (a probe's request is one write, sent at once with Nagle's algorithm
// on or off). Its errors read as net.Dialer's: "dial tcp ADDR: connect: connection
// refused", "dial tcp ADDR: i/o timeout".
func streamDial(ctx context.Context, ap netip.AddrPort) (net.Conn, error) {
	raddr := net.TCPAddrFromAddrPort(ap)
	fail := func(err error) error { return &net.OpError{Op: "dial", Net: "tcp", Addr: raddr, Err: err} }
	if err := ctx.Err(); err != nil {
		return nil, fail(ctxErr(err))
	}
	family, sa := syscall.AF_INET, syscall.Sockaddr(&syscall.SockaddrInet4{Port: int(ap.Port()), Addr: ap.Addr().As4()})
	if ap.Addr().Is6() {
		family, sa = syscall.AF_INET6, &syscall.SockaddrInet6{Port: int(ap.Port()), Addr: ap.Addr().As16()}
	}
	fd, err := syscall.Socket(family, syscall.SOCK_STREAM|syscall.SOCK_NONBLOCK|syscall.SOCK_CLOEXEC, syscall.IPPROTO_TCP)
	if err != nil {
		return nil, fail(os.NewSyscallError("socket", err))
	}
	for {
		err = syscall.Connect(fd, sa)
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
	f := os.NewFile(uintptr(fd), "tcp "+raddr.String())
	if err != nil {
		// In progress. To a loopback or local address the handshake is over before
		// connect returns: the peer's address says so without waiting.
		if _, perr := syscall.Getpeername(fd); perr != nil {
			if err := waitConnected(ctx, f); err != nil {
				f.Close()
				return nil, fail(err)
			}
		}
	}
	return &streamConn{File: f, raddr: raddr}, nil
}

// waitConnected waits until f's connect is over, or ctx ends, and returns its
// error.
func waitConnected(ctx context.Context, f *os.File) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	if dl, ok := ctx.Deadline(); ok {
		f.SetWriteDeadline(dl)
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
			_, err := syscall.Getpeername(int(fd))
			return err == nil // else still connecting
		case syscall.EINPROGRESS, syscall.EALREADY, syscall.EINTR:
			return false
		default:
			connErr = os.NewSyscallError("connect", e)
			return true
		}
	})
	if !stop() || err != nil {
		// ctx ended (the deadline set or the cancel): report it as net.Dialer does,
		// also when the connect completed as it ended.
		if ctx.Err() != nil {
			return ctxErr(ctx.Err())
		}
		if err != nil {
			return err
		}
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
