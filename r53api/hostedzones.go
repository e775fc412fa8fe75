package r53api

import (
	"encoding/xml"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/miekg/dns"

	"github.com/healthroute/healthroute/control"
)

type createHostedZoneRequest struct {
	XMLName          xml.Name `xml:"CreateHostedZoneRequest"`
	Name             string
	CallerReference  string
	HostedZoneConfig *zoneConfig
	VPC              *struct{ VPCRegion, VPCId string }
	DelegationSetId  string
}

type createHostedZoneResponse struct {
	XMLName       xml.Name `xml:"CreateHostedZoneResponse"`
	Xmlns         string   `xml:"xmlns,attr"`
	HostedZone    hostedZone
	ChangeInfo    changeInfo
	DelegationSet delegationSet
}

type deleteHostedZoneResponse struct {
	XMLName    xml.Name `xml:"DeleteHostedZoneResponse"`
	Xmlns      string   `xml:"xmlns,attr"`
	ChangeInfo changeInfo
}

// under reports whether name is zone or below it; every name is below the root.
func under(zone, name string) bool {
	return zone == "." || name == zone || strings.HasSuffix(name, "."+zone)
}

// delegating returns the zone of zs that delegates to the API and holds name,
// the one nearest to it; nil when none does.
func delegating(zs []Zone, name string) *Zone {
	var p *Zone
	for i := range zs {
		if zs[i].Delegates && under(zs[i].Name, name) && (p == nil || len(zs[i].Name) > len(p.Name)) {
			p = &zs[i]
		}
	}
	return p
}

// allZones returns the blocks' hosted zones and those created through the API
// that a block's zone delegating to the API holds. A created zone no block holds
// now (its block was removed) is not served, and lists nowhere, until one does.
func (s *Server) allZones() []Zone {
	zs := s.be.Zones()
	st := s.state()
	if len(st.Hosted) == 0 {
		return zs
	}
	out := slices.Clone(zs)
	for _, name := range slices.Sorted(maps.Keys(st.Hosted)) {
		p := delegating(zs, name)
		if p == nil || slices.ContainsFunc(zs, func(z Zone) bool { return z.Name == name }) {
			continue
		}
		z := Zone{Name: name, Checks: p.Checks, Created: st.Hosted[name], Corefile: map[string]string{}}
		for n, at := range p.Corefile {
			if under(name, strings.TrimPrefix(n, "*.")) {
				z.Corefile[n] = at
			}
		}
		out = append(out, z)
	}
	return out
}

func errDomain(msg string) *apiError { return newErr(http.StatusBadRequest, "InvalidDomainName", msg) }

// createHostedZone creates a public hosted zone below a zone whose block
// delegates to the API; the block answers it once every member reloaded.
func (s *Server) createHostedZone(w http.ResponseWriter, r *http.Request) {
	var req createHostedZoneRequest
	if !decoded(w, r, &req) {
		return
	}
	if req.Name == "" || req.CallerReference == "" || len(req.CallerReference) > 128 {
		errInput("A hosted zone needs a Name and a CallerReference of 1 to 128 characters").write(w)
		return
	}
	if req.VPC != nil || req.HostedZoneConfig != nil && req.HostedZoneConfig.PrivateZone {
		errInput("Private hosted zones are not supported: healthroute's hosted zones are public").write(w)
		return
	}
	if req.DelegationSetId != "" {
		newErr(http.StatusBadRequest, "NoSuchDelegationSet", "Reusable delegation sets are not supported: "+req.DelegationSetId).write(w)
		return
	}
	name := control.NormalizeName(req.Name)
	if _, ok := dns.IsDomainName(name); !ok || name == "." || strings.Contains(name, "*") {
		errDomain(fmt.Sprintf("%s is not a valid domain name", req.Name)).write(w)
		return
	}
	zs := s.allZones()
	if slices.ContainsFunc(zs, func(z Zone) bool { return z.Name == name }) {
		newErr(http.StatusConflict, control.CodeHostedZoneExists, fmt.Sprintf("A hosted zone named %s already exists (%s)", name, ZoneID(name))).write(w)
		return
	}
	if delegating(zs, name) == nil {
		errDomain(fmt.Sprintf("No block of this server serves hosted zones created through the API at or above %s (route53_api's hosted_zones property)", name)).write(w)
		return
	}
	// A zone over another's record sets or instances is refused by the state
	// machine (ConflictingDomainExists), in the leader's order.
	hz := &control.APIHostedZone{Name: name, CallerReference: req.CallerReference, Created: time.Now().UTC()}
	if req.HostedZoneConfig != nil {
		hz.Comment = req.HostedZoneConfig.Comment
	}
	cmd := &control.APICommand{ChangeID: newChangeID(), APIResourceCommand: control.APIResourceCommand{CreateZone: hz}}
	if !s.proposed(w, r, cmd, "") {
		return
	}
	z := Zone{Name: name, Created: hz}
	w.Header().Set("Location", "/2013-04-01/hostedzone/"+z.ID())
	writeXML(w, http.StatusCreated, createHostedZoneResponse{Xmlns: Namespace, HostedZone: s.hostedZone(z, s.state()),
		ChangeInfo: s.changeInfo(cmd.ChangeID), DelegationSet: delegationSet{NameServers: []string{}}})
}

// deleteHostedZone deletes a hosted zone created through the API that holds no
// record set; a block's own zone is the Corefile's.
func (s *Server) deleteHostedZone(w http.ResponseWriter, r *http.Request) {
	z, e := s.zone(r)
	if e != nil {
		e.write(w)
		return
	}
	if z.Created == nil {
		errInput(fmt.Sprintf("The hosted zone %s is a zone of the Corefile: remove it there", z.Name)).write(w)
		return
	}
	cmd := &control.APICommand{ChangeID: newChangeID(), APIResourceCommand: control.APIResourceCommand{DeleteZone: z.Name}}
	if !s.proposed(w, r, cmd, "") {
		return
	}
	writeXML(w, http.StatusOK, deleteHostedZoneResponse{Xmlns: Namespace, ChangeInfo: s.changeInfo(cmd.ChangeID)})
}

// changeInfo returns change id's ChangeInfo; one applied at the leader and not
// yet here is pending.
func (s *Server) changeInfo(id string) changeInfo {
	if ci, ok := s.changeStatus(id); ok {
		return ci
	}
	return changeInfo{Id: "/change/" + id, Status: "PENDING", SubmittedAt: time.Now().UTC().Format(time.RFC3339Nano)}
}
