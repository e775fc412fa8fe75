// Command region runs one region of the WebSocket disaster-recovery example. Start it
// twice, on different loopback addresses and the same port, each naming the other as
// its peer:
//
//	go run ./examples/websocket-dr/cmd/region -name primary -listen 127.0.0.1:18443 -peer http://127.0.0.2:18443
//	go run ./examples/websocket-dr/cmd/region -name standby -listen 127.0.0.2:18443 -peer http://127.0.0.1:18443
package main

import (
	"context"
	"errors"
	"flag"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/healthroute/healthroute/examples/websocket-dr/region"
)

func main() {
	name := flag.String("name", "primary", "region name, reported to clients")
	listen := flag.String("listen", "127.0.0.1:18443", "address to serve on")
	peer := flag.String("peer", "", "base URL of the other region, e.g. http://127.0.0.2:18443")
	every := flag.Duration("replicate", 500*time.Millisecond, "replication flush interval")
	flag.Parse()

	logger := log.New(os.Stderr, "region "+*name+": ", log.Ltime|log.Lmicroseconds)
	s := region.New(region.Config{Name: *name, Peer: *peer, ReplicateEvery: *every, Logf: logger.Printf})

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// A region that comes back takes over what the peer holds before it serves.
	bctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	n, err := s.Bootstrap(bctx)
	cancel()
	if err != nil {
		logger.Printf("bootstrap from %s: %v (starting empty)", *peer, err)
	} else if *peer != "" {
		logger.Printf("bootstrap from %s: %d sessions", *peer, n)
	}

	l, err := net.Listen("tcp", *listen)
	if err != nil {
		logger.Fatal(err)
	}
	srv := &http.Server{Handler: s, ReadHeaderTimeout: 5 * time.Second}
	go s.Replicate(ctx)
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		srv.Shutdown(sctx)
	}()
	logger.Printf("serving on %s (replicating to %q every %s)", l.Addr(), *peer, *every)
	if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
		logger.Fatal(err)
	}
}
