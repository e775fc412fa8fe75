package r53api

import (
	"encoding/xml"
	"fmt"
	"net/http"
	"net/netip"
	"strconv"
	"strings"

	"github.com/miekg/dns"

	"github.com/healthroute/healthroute/control"
	"github.com/healthroute/healthroute/view"
)

type testDNSAnswerResponse struct {
	XMLName      xml.Name `xml:"TestDNSAnswerResponse"`
	Xmlns        string   `xml:"xmlns,attr"`
	Nameserver   string
	RecordName   string
	RecordType   string
	RecordData   []string `xml:"RecordData>RecordDataEntry"`
	ResponseCode string
	Protocol     string
}

// testClient returns the client a TestDNSAnswer simulates: the EDNS0 client
// subnet (edns0clientsubnetip, cut to edns0clientsubnetmask bits, by default 24
// for IPv4 and 64 for IPv6, as Route 53 cuts it), else the resolver's address,
// else a client nothing is known of.
func testClient(q map[string][]string) (netip.Prefix, *apiError) {
	get := func(k string) string {
		if v := q[k]; len(v) > 0 {
			return v[0]
		}
		return ""
	}
	ip, mask, resolver := get("edns0clientsubnetip"), get("edns0clientsubnetmask"), get("resolverip")
	if ip == "" {
		if mask != "" {
			return netip.Prefix{}, errInput("EDNS0ClientSubnetMask requires EDNS0ClientSubnetIP")
		}
		if resolver == "" {
			return netip.MustParsePrefix("0.0.0.0/32"), nil
		}
		a, err := netip.ParseAddr(resolver)
		if err != nil {
			return netip.Prefix{}, errInput(fmt.Sprintf("ResolverIP '%s' is not an IP address", resolver))
		}
		a = a.Unmap()
		return netip.PrefixFrom(a, a.BitLen()), nil
	}
	a, err := netip.ParseAddr(ip)
	if err != nil {
		return netip.Prefix{}, errInput(fmt.Sprintf("EDNS0ClientSubnetIP '%s' is not an IP address", ip))
	}
	a = a.Unmap()
	bits := 24
	if a.Is6() {
		bits = 64
	}
	if mask != "" {
		if bits, err = strconv.Atoi(mask); err != nil || bits < 0 || bits > a.BitLen() {
			return netip.Prefix{}, errInput(fmt.Sprintf("EDNS0ClientSubnetMask '%s' is not a number of bits from 0 to %d", mask, a.BitLen()))
		}
	}
	return netip.PrefixFrom(a, bits).Masked(), nil
}

// testDNSAnswer answers what a DNS query for the record name and type gets, as
// explain resolves it: the same walk that answers DNS queries.
func (s *Server) testDNSAnswer(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	id := q.Get("hostedzoneid")
	var z *Zone
	for _, hz := range s.allZones() {
		if hz.ID() == strings.TrimPrefix(id, "/hostedzone/") {
			z = &hz
			break
		}
	}
	if z == nil {
		errNoZone(id).write(w)
		return
	}
	name, typ := q.Get("recordname"), strings.ToUpper(q.Get("recordtype"))
	qtype, ok := dns.StringToType[typ]
	if _, valid := dns.IsDomainName(name); name == "" || !valid || !ok {
		errInput("TestDNSAnswer needs a RecordName (a domain name) and a RecordType (A, AAAA, CNAME, ...)").write(w)
		return
	}
	name = control.NormalizeName(name)
	if !under(z.Name, name) {
		errInput(fmt.Sprintf("The record name %s is not in the hosted zone %s", name, z.Name)).write(w)
		return
	}
	client, e := testClient(q)
	if e != nil {
		e.write(w)
		return
	}
	resp := testDNSAnswerResponse{Xmlns: Namespace, Nameserver: "healthroute", RecordName: name, RecordType: typ, RecordData: []string{}, Protocol: "UDP"}
	if n := s.be.Node(); n != nil {
		resp.Nameserver = n.Name()
	}
	if s.be.Explain == nil {
		resp.ResponseCode = "SERVFAIL"
		writeXML(w, http.StatusOK, resp)
		return
	}
	ex, served := s.be.Explain(view.Question{Name: name, Type: qtype, Client: client})
	if !served {
		resp.ResponseCode = "REFUSED"
		writeXML(w, http.StatusOK, resp)
		return
	}
	resp.ResponseCode = ex.Rcode
	for _, line := range ex.Answer {
		rr, err := dns.NewRR(line)
		if err != nil || rr == nil {
			continue
		}
		resp.RecordData = append(resp.RecordData, strings.TrimPrefix(rr.String(), rr.Header().String()))
	}
	writeXML(w, http.StatusOK, resp)
}
