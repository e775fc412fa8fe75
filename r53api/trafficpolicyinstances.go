package r53api

import (
	"encoding/xml"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/healthroute/healthroute/control"
	"github.com/healthroute/healthroute/route53"
)

type policyInstanceXML struct {
	Id                   string
	HostedZoneId         string
	Name                 string
	TTL                  int64
	State                string
	Message              string
	TrafficPolicyId      string
	TrafficPolicyVersion int
	TrafficPolicyType    string
}

type policyInstanceRequest struct {
	XMLName              xml.Name
	HostedZoneId         string
	Name                 string
	TTL                  *int64
	TrafficPolicyId      string
	TrafficPolicyVersion int
}

type policyInstanceResponse struct {
	XMLName               xml.Name
	Xmlns                 string `xml:"xmlns,attr"`
	TrafficPolicyInstance policyInstanceXML
}

type listPolicyInstancesResponse struct {
	XMLName                xml.Name
	Xmlns                  string              `xml:"xmlns,attr"`
	TrafficPolicyInstances []policyInstanceXML `xml:"TrafficPolicyInstances>TrafficPolicyInstance"`
	IsTruncated            bool
	MaxItems               string
}

type deletePolicyInstanceResponse struct {
	XMLName xml.Name `xml:"DeleteTrafficPolicyInstanceResponse"`
	Xmlns   string   `xml:"xmlns,attr"`
}

func instanceXML(in *control.APIPolicyInstance) policyInstanceXML {
	r := in.Record
	return policyInstanceXML{Id: r.Id, HostedZoneId: ZoneID(in.Zone), Name: r.Name, TTL: r.TTL, State: r.State, Message: r.Message,
		TrafficPolicyId: r.TrafficPolicyId, TrafficPolicyVersion: r.TrafficPolicyVersion, TrafficPolicyType: r.TrafficPolicyType}
}

func errNoInstance(id string) *apiError {
	return newErr(http.StatusNotFound, control.CodeNoSuchTrafficPolicyInstance, "No traffic policy instance exists with the ID "+id)
}

// putPolicyInstance proposes an instance command and answers the instance. The
// state machine decides it (control.APIState.putInstance): the policy version
// must exist and the zone convert, its policy records with the record sets they
// meet, in the leader's order; a signed request is decided once, as a batch is.
func (s *Server) putPolicyInstance(w http.ResponseWriter, r *http.Request, z Zone, cmd *control.APICommand, in *control.APIPolicyInstance, status int, root string) {
	cmd.Reserved = z.Checks
	if !s.proposed(w, r, cmd, "") {
		return
	}
	got := in.Record // as the state machine keeps it
	got.State = "Applied"
	if p := s.state().Policies[got.TrafficPolicyId]; p != nil {
		got.TrafficPolicyType = p.Type
	}
	w.Header().Set("Location", "/2013-04-01/trafficpolicyinstance/"+got.Id)
	writeXML(w, status, policyInstanceResponse{XMLName: xml.Name{Local: root}, Xmlns: Namespace, TrafficPolicyInstance: instanceXML(&control.APIPolicyInstance{Zone: in.Zone, Record: got})})
}

func (s *Server) createPolicyInstance(w http.ResponseWriter, r *http.Request) {
	var req policyInstanceRequest
	if !decoded(w, r, &req) {
		return
	}
	var z *Zone
	for _, hz := range s.allZones() {
		if hz.ID() == req.HostedZoneId || "/hostedzone/"+hz.ID() == req.HostedZoneId {
			z = &hz
			break
		}
	}
	if z == nil {
		errNoZone(req.HostedZoneId).write(w)
		return
	}
	name := control.NormalizeName(req.Name)
	switch {
	case req.TTL == nil || *req.TTL < 0 || *req.TTL > 2147483647:
		errInput("A traffic policy instance needs a TTL from 0 to 2147483647").write(w)
		return
	case req.Name == "" || !under(z.Name, name):
		errInput(fmt.Sprintf("The name %s is not in the hosted zone %s", name, z.Name)).write(w)
		return
	case z.Corefile[name] != "":
		errInput(fmt.Sprintf("The name %s is defined in the Corefile (%s): it is read-only through the API", name, z.Corefile[name])).write(w)
		return
	}
	in := &control.APIPolicyInstance{Zone: z.Name, Record: route53.PolicyRecord{Id: newCollectionID(), HostedZoneId: z.ID(), Name: name, TTL: *req.TTL,
		TrafficPolicyId: req.TrafficPolicyId, TrafficPolicyVersion: req.TrafficPolicyVersion}}
	cmd := &control.APICommand{ChangeID: newChangeID(), APIResourceCommand: control.APIResourceCommand{CreateInstance: in}}
	s.putPolicyInstance(w, r, *z, cmd, in, http.StatusCreated, "CreateTrafficPolicyInstanceResponse")
}

// instanceZone returns the instance the request's {id} names and its zone.
func (s *Server) instanceZone(r *http.Request) (*control.APIPolicyInstance, Zone, *apiError) {
	id := r.PathValue("id")
	in := s.state().Instances[id]
	if in == nil {
		return nil, Zone{}, errNoInstance(id)
	}
	for _, z := range s.allZones() {
		if z.Name == in.Zone {
			return in, z, nil
		}
	}
	return nil, Zone{}, errNoZone(ZoneID(in.Zone))
}

func (s *Server) updatePolicyInstance(w http.ResponseWriter, r *http.Request) {
	have, z, e := s.instanceZone(r)
	if e != nil {
		e.write(w)
		return
	}
	var req policyInstanceRequest
	if !decoded(w, r, &req) {
		return
	}
	if req.TTL == nil || *req.TTL < 0 || *req.TTL > 2147483647 {
		errInput("UpdateTrafficPolicyInstance needs a TTL from 0 to 2147483647").write(w)
		return
	}
	in := &control.APIPolicyInstance{Zone: have.Zone, Record: have.Record}
	in.Record.TTL, in.Record.TrafficPolicyId, in.Record.TrafficPolicyVersion = *req.TTL, req.TrafficPolicyId, req.TrafficPolicyVersion
	cmd := &control.APICommand{ChangeID: newChangeID(), APIResourceCommand: control.APIResourceCommand{UpdateInstance: in}}
	s.putPolicyInstance(w, r, z, cmd, in, http.StatusOK, "UpdateTrafficPolicyInstanceResponse")
}

func (s *Server) getPolicyInstance(w http.ResponseWriter, r *http.Request) {
	in, _, e := s.instanceZone(r)
	if e != nil {
		e.write(w)
		return
	}
	writeXML(w, http.StatusOK, policyInstanceResponse{XMLName: xml.Name{Local: "GetTrafficPolicyInstanceResponse"}, Xmlns: Namespace, TrafficPolicyInstance: instanceXML(in)})
}

func (s *Server) deletePolicyInstance(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	cmd := &control.APICommand{ChangeID: newChangeID(), APIResourceCommand: control.APIResourceCommand{DeleteInstance: id}}
	if in := s.state().Instances[id]; in != nil {
		for _, z := range s.allZones() {
			if z.Name == in.Zone {
				cmd.Reserved = z.Checks
			}
		}
	}
	if !s.proposed(w, r, cmd, control.CodeNoSuchTrafficPolicyInstance) {
		return
	}
	writeXML(w, http.StatusOK, deletePolicyInstanceResponse{Xmlns: Namespace})
}

// listPolicyInstances lists every instance in one page, by name; by hosted zone
// (id) or by policy version (id, version) when the path says so.
func (s *Server) listPolicyInstances(w http.ResponseWriter, r *http.Request) {
	st := s.state()
	q := r.URL.Query()
	keep := func(*control.APIPolicyInstance) bool { return true }
	root := "ListTrafficPolicyInstancesResponse"
	switch {
	case strings.HasSuffix(r.URL.Path, "/hostedzone"):
		id := strings.TrimPrefix(q.Get("id"), "/hostedzone/")
		if !slices.ContainsFunc(s.allZones(), func(z Zone) bool { return z.ID() == id }) {
			errNoZone(id).write(w)
			return
		}
		keep, root = func(in *control.APIPolicyInstance) bool { return ZoneID(in.Zone) == id }, "ListTrafficPolicyInstancesByHostedZoneResponse"
	case strings.HasSuffix(r.URL.Path, "/trafficpolicy"):
		id, v := q.Get("id"), q.Get("version")
		if p := st.Policies[id]; p == nil {
			errNoPolicy(id).write(w)
			return
		}
		keep = func(in *control.APIPolicyInstance) bool {
			return in.Record.TrafficPolicyId == id && strconv.Itoa(in.Record.TrafficPolicyVersion) == v
		}
		root = "ListTrafficPolicyInstancesByPolicyResponse"
	}
	resp := listPolicyInstancesResponse{XMLName: xml.Name{Local: root}, Xmlns: Namespace, TrafficPolicyInstances: []policyInstanceXML{}, MaxItems: strconv.Itoa(control.MaxTrafficPolicyInstances)}
	for _, in := range st.Instances {
		if keep(in) {
			resp.TrafficPolicyInstances = append(resp.TrafficPolicyInstances, instanceXML(in))
		}
	}
	slices.SortFunc(resp.TrafficPolicyInstances, func(a, b policyInstanceXML) int {
		return strings.Compare(reversed(control.NormalizeName(a.Name)), reversed(control.NormalizeName(b.Name)))
	})
	writeXML(w, http.StatusOK, resp)
}

type policyInstanceCountResponse struct {
	XMLName                    xml.Name `xml:"GetTrafficPolicyInstanceCountResponse"`
	Xmlns                      string   `xml:"xmlns,attr"`
	TrafficPolicyInstanceCount int
}

func (s *Server) getPolicyInstanceCount(w http.ResponseWriter, r *http.Request) {
	writeXML(w, http.StatusOK, policyInstanceCountResponse{Xmlns: Namespace, TrafficPolicyInstanceCount: len(s.state().Instances)})
}

// instanceSets returns the record sets of zone's traffic policy instances, as
// Route 53 lists them (read-only, with TrafficPolicyInstanceId); none when they
// do not convert (the state holds only instances that did).
func instanceSets(st *control.APIState, zone string) []route53.ResourceRecordSet {
	records := st.PolicyRecords(zone)
	if len(records) == 0 {
		return nil
	}
	sets, err := route53.PolicyRecordSets(route53.Input{Zone: zone, TrafficPolicies: st.TrafficPolicies(), PolicyRecords: records})
	if err != nil {
		return nil
	}
	return sets
}
