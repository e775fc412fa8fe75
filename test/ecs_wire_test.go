package test

import (
	"encoding/binary"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/healthroute/healthroute/internal/coretest"
	"github.com/miekg/dns"
)

// ecsQueryWire is an A query for name with one EDNS option of code 8 whose data
// is written byte for byte: miekg/dns masks the address when it packs an ECS
// option, so a malformed one has to be built by hand.
func ecsQueryWire(t *testing.T, name string, data []byte) []byte {
	t.Helper()
	m := new(dns.Msg)
	m.SetQuestion(name, dns.TypeA)
	m.Id = 0x4242
	b, err := m.Pack()
	if err != nil {
		t.Fatal(err)
	}
	binary.BigEndian.PutUint16(b[10:], 1) // ARCOUNT: the OPT record below
	opt := []byte{0, 0, byte(dns.TypeOPT), 0x04, 0xd0, 0, 0, 0, 0}
	opt = binary.BigEndian.AppendUint16(opt, uint16(4+len(data)))
	opt = binary.BigEndian.AppendUint16(opt, dns.EDNS0SUBNET)
	opt = binary.BigEndian.AppendUint16(opt, uint16(len(data)))
	return append(append(b, opt...), data...)
}

// exchangeRawRcode sends one datagram to addr and returns the reply's rcode.
func exchangeRawRcode(t *testing.T, addr string, q []byte) int {
	t.Helper()
	c, err := net.Dial("udp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.SetDeadline(time.Now().Add(5 * time.Second)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write(q); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4096)
	n, err := c.Read(buf)
	if err != nil {
		t.Fatalf("no reply: %v", err)
	}
	if n < 12 {
		t.Fatalf("reply of %d bytes", n)
	}
	return int(buf[3] & 0x0f)
}

// TestECSOnTheWire sends ECS options as a resolver (or an attacker) writes them
// to the built server: well-formed ones are answered for the subnet, malformed ones
// (RFC 7871 section 6) get FORMERR.
func TestECSOnTheWire(t *testing.T) {
	port := coretest.FreePort(t)
	s := coretest.Start(t, fmt.Sprintf(`example.org:%d {
	bind 127.0.0.1
	healthroute {
		record ip.example.org. ip {
			cidr 10.1.0.0/16 A 192.0.2.1
			default A 192.0.2.9
		}
	}
}`, port), port, "ip.example.org")
	ecs := func(family uint16, source, scope byte, addr ...byte) []byte {
		return append(binary.BigEndian.AppendUint16(nil, family), append([]byte{source, scope}, addr...)...)
	}
	tests := []struct {
		name string
		data []byte
		want int
	}{
		{"v4 /24", ecs(1, 24, 0, 10, 1, 2), dns.RcodeSuccess},
		{"v4 /0", ecs(1, 0, 0), dns.RcodeSuccess},
		{"no family, /0 (dig +subnet=0)", ecs(0, 0, 0), dns.RcodeSuccess},
		{"no family, /8", ecs(0, 8, 0, 10), dns.RcodeFormatError},
		{"v6 /56", ecs(2, 56, 0, 0x20, 0x01, 0x0d, 0xb8, 0, 1, 0), dns.RcodeSuccess},
		{"v4 address bits past a /20", ecs(1, 20, 0, 10, 1, 0x0f), dns.RcodeFormatError},
		{"v4 /24 with a nonzero fourth octet", ecs(1, 24, 0, 10, 1, 2, 3), dns.RcodeFormatError},
		{"v6 address bits past a /56", ecs(2, 56, 0, 0x20, 0x01, 0x0d, 0xb8, 0, 1, 0, 1), dns.RcodeFormatError},
		{"v4 /33", ecs(1, 33, 0, 10, 1, 2, 3, 0), dns.RcodeFormatError},
		{"scope set in a query", ecs(1, 24, 8, 10, 1, 2), dns.RcodeFormatError},
		{"unknown family", ecs(3, 24, 0, 10, 1, 2), dns.RcodeFormatError},
		{"option shorter than its header", []byte{0, 1}, dns.RcodeFormatError},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := exchangeRawRcode(t, s.Addr, ecsQueryWire(t, "ip.example.org.", tc.data)); got != tc.want {
				t.Errorf("rcode %s, want %s", dns.RcodeToString[got], dns.RcodeToString[tc.want])
			}
		})
	}
	// The server still answers after the malformed ones.
	if got := exchangeRawRcode(t, s.Addr, ecsQueryWire(t, "ip.example.org.", ecs(1, 24, 0, 10, 1, 2))); got != dns.RcodeSuccess {
		t.Fatalf("after the malformed options: rcode %s", dns.RcodeToString[got])
	}
}
