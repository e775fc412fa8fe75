package r53api

import (
	"encoding/xml"
	"net/http"
	"net/netip"

	"github.com/healthroute/healthroute/control"
	"github.com/healthroute/healthroute/view"
)

// Lookups are what the calls that read the fleet and DNS ask of the server
// embedding the API; a nil func answers as if there were nothing to tell.
type Lookups struct {
	// CheckerIPs returns the addresses the fleet's checkers probe from
	// (GetCheckerIpRanges).
	CheckerIPs func() []netip.Prefix
	// Explain resolves q exactly as a DNS query from q.Client would be answered,
	// by the block serving q.Name (TestDNSAnswer); false when no block serves it.
	Explain func(q view.Question) (view.Explanation, bool)
}

// moreRoutes registers the calls of the files beside server.go.
func (s *Server) moreRoutes(m *http.ServeMux, v string) {
	m.HandleFunc("GET "+v+"/healthcheck/{id}/lastfailurereason", s.getHealthCheckLastFailureReason)
	m.HandleFunc("GET "+v+"/checkeripranges", s.getCheckerIPRanges)
	m.HandleFunc("GET "+v+"/testdnsanswer", s.testDNSAnswer)
	m.HandleFunc("POST "+v+"/hostedzone", s.createHostedZone)
	m.HandleFunc("POST "+v+"/cidrcollection", s.createCidrCollection)
	m.HandleFunc("GET "+v+"/cidrcollection", s.listCidrCollections)
	m.HandleFunc("POST "+v+"/cidrcollection/{id}", s.changeCidrCollection)
	m.HandleFunc("GET "+v+"/cidrcollection/{id}", s.listCidrLocations)
	m.HandleFunc("GET "+v+"/cidrcollection/{id}/cidrblocks", s.listCidrBlocks)
	m.HandleFunc("DELETE "+v+"/cidrcollection/{id}", s.deleteCidrCollection)
	m.HandleFunc("POST "+v+"/trafficpolicy", s.createTrafficPolicy)
	m.HandleFunc("POST "+v+"/trafficpolicy/{id}", s.createTrafficPolicy)
	m.HandleFunc("GET "+v+"/trafficpolicy/{id}/{version}", s.getTrafficPolicy)
	m.HandleFunc("DELETE "+v+"/trafficpolicy/{id}/{version}", s.deleteTrafficPolicy)
	m.HandleFunc("GET "+v+"/trafficpolicies", s.listTrafficPolicies)
	m.HandleFunc("GET "+v+"/trafficpolicies/{id}/versions", s.listTrafficPolicyVersions)
	m.HandleFunc("POST "+v+"/trafficpolicyinstance", s.createPolicyInstance)
	m.HandleFunc("GET "+v+"/trafficpolicyinstance/{id}", s.getPolicyInstance)
	m.HandleFunc("POST "+v+"/trafficpolicyinstance/{id}", s.updatePolicyInstance)
	m.HandleFunc("DELETE "+v+"/trafficpolicyinstance/{id}", s.deletePolicyInstance)
	m.HandleFunc("GET "+v+"/trafficpolicyinstances", s.listPolicyInstances)
	m.HandleFunc("GET "+v+"/trafficpolicyinstances/hostedzone", s.listPolicyInstances)
	m.HandleFunc("GET "+v+"/trafficpolicyinstances/trafficpolicy", s.listPolicyInstances)
	m.HandleFunc("GET "+v+"/trafficpolicyinstancecount", s.getPolicyInstanceCount)
	m.HandleFunc("POST "+v+"/trafficpolicy/{id}/{version}", s.updateTrafficPolicyComment)
	m.HandleFunc("DELETE "+v+"/hostedzone/{id}", s.deleteHostedZone)
}

// decoded reads the request's XML body into v, or answers InvalidInput and
// returns false.
func decoded(w http.ResponseWriter, r *http.Request, v any) bool {
	if err := xml.NewDecoder(r.Body).Decode(v); err != nil {
		errInput("Invalid XML ; " + err.Error()).write(w)
		return false
	}
	return true
}

// proposed proposes cmd and answers its refusal (with 404 when its code is
// notFound) and returns false, or returns true.
func (s *Server) proposed(w http.ResponseWriter, r *http.Request, cmd *control.APICommand, notFound string) bool {
	e := s.propose(r.Context(), cmd)
	if e == nil {
		return true
	}
	if e.code == notFound {
		e.status = http.StatusNotFound
	}
	e.write(w)
	return false
}
