package health

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"math/big"
	"net"
	"strings"
	"sync"
	"testing"
	"time"
)

const testAgent = "healthroute/test"

// probeOnce builds spec's checker and runs one probe under the budget the scheduler
// would give it; it returns the result and how long the probe took.
func probeOnce(t *testing.T, spec *Spec) (error, time.Duration) {
	t.Helper()
	c, err := NewChecker(spec, testAgent)
	if err != nil {
		t.Fatalf("NewChecker: %v", err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), budget(spec))
	defer cancel()
	start := time.Now()
	err = c.Check(ctx)
	return err, time.Since(start)
}

// rawServer listens on loopback and runs serve for each connection. done is closed
// when the test ends, so a server that hangs can return. It returns host:port.
func rawServer(t testing.TB, serve func(c net.Conn, done <-chan struct{})) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				serve(c, done)
			}()
		}
	}()
	t.Cleanup(func() {
		close(done)
		ln.Close()
		wg.Wait()
	})
	return ln.Addr().String()
}

// reset closes c with an RST instead of a FIN.
func reset(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetLinger(0)
	}
	c.Close()
}

// expiredCert returns a self-signed certificate for example.org that expired
// yesterday: probes must not care.
func expiredCert(t *testing.T) tls.Certificate {
	t.Helper()
	cert, err := selfSignedCert(time.Now().Add(-48*time.Hour), time.Now().Add(-24*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	return cert
}

// selfSignedCert returns a self-signed ECDSA P-256 certificate for example.org, valid
// from notBefore to notAfter.
func selfSignedCert(notBefore, notAfter time.Time) (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "example.org"},
		DNSNames:     []string{"example.org"},
		NotBefore:    notBefore,
		NotAfter:     notAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}

// wantResult checks a probe result against the expectation: "" means pass,
// anything else a failure whose text contains it.
func wantResult(t *testing.T, err error, want string) {
	t.Helper()
	switch {
	case want == "" && err != nil:
		t.Fatalf("probe failed: %v; want a pass", err)
	case want != "" && err == nil:
		t.Fatalf("probe passed; want a failure containing %q", want)
	case want != "" && !containsErr(err, want):
		t.Fatalf("probe failed with %q; want it to contain %q", err, want)
	}
}

func containsErr(err error, s string) bool {
	if errors.Is(err, ErrNoData) && s == ErrNoData.Error() {
		return true
	}
	return err != nil && len(s) > 0 && strings.Contains(err.Error(), s)
}
