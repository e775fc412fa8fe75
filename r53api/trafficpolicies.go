package r53api

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/healthroute/healthroute/control"
	"github.com/healthroute/healthroute/route53"
)

type trafficPolicyXML struct {
	Id       string
	Version  int
	Name     string
	Type     string
	Document string
	Comment  string `xml:",omitempty"`
}

type createTrafficPolicyRequest struct {
	XMLName  xml.Name
	Name     string
	Document string
	Comment  string
}

type trafficPolicyResponse struct {
	XMLName       xml.Name
	Xmlns         string `xml:"xmlns,attr"`
	TrafficPolicy trafficPolicyXML
}

type trafficPolicySummary struct {
	Id, Name, Type                    string
	LatestVersion, TrafficPolicyCount int
}

type listTrafficPoliciesResponse struct {
	XMLName                xml.Name               `xml:"ListTrafficPoliciesResponse"`
	Xmlns                  string                 `xml:"xmlns,attr"`
	TrafficPolicySummaries []trafficPolicySummary `xml:"TrafficPolicySummaries>TrafficPolicySummary"`
	IsTruncated            bool
	TrafficPolicyIdMarker  string
	MaxItems               string
}

type listTrafficPolicyVersionsResponse struct {
	XMLName                    xml.Name           `xml:"ListTrafficPolicyVersionsResponse"`
	Xmlns                      string             `xml:"xmlns,attr"`
	TrafficPolicies            []trafficPolicyXML `xml:"TrafficPolicies>TrafficPolicy"`
	IsTruncated                bool
	TrafficPolicyVersionMarker string
	MaxItems                   string
}

type deleteTrafficPolicyResponse struct {
	XMLName xml.Name `xml:"DeleteTrafficPolicyResponse"`
	Xmlns   string   `xml:"xmlns,attr"`
}

func policyXML(p route53.TrafficPolicy) trafficPolicyXML {
	return trafficPolicyXML{Id: p.Id, Version: p.Version, Name: p.Name, Type: p.Type, Document: p.Document, Comment: p.Comment}
}

func errNoPolicy(id string) *apiError {
	return newErr(http.StatusNotFound, control.CodeNoSuchTrafficPolicy, "No traffic policy exists with the ID "+id)
}

// checkDocument returns the record type of a traffic policy document, or why it
// is refused: it must convert, as the route53 property converts it, for a policy
// record of its own (with the API's health checks and CIDR collections).
func checkDocument(st *control.APIState, doc string) (string, *apiError) {
	var head struct{ RecordType string }
	json.Unmarshal([]byte(doc), &head)
	in := route53.Input{Zone: "healthroute.invalid.", CIDRBlocks: st.CIDRBlocks(),
		TrafficPolicies: []route53.TrafficPolicy{{Id: "document", Version: 1, Document: doc}},
		PolicyRecords:   []route53.PolicyRecord{{Name: "policy.healthroute.invalid.", TTL: 60, TrafficPolicyId: "document", TrafficPolicyVersion: 1}}}
	for _, id := range slices.Sorted(maps.Keys(st.HealthChecks)) {
		in.HealthChecks = append(in.HealthChecks, st.HealthChecks[id].HealthCheck)
	}
	if _, err := route53.Convert(in); err != nil {
		return "", newErr(http.StatusBadRequest, "InvalidTrafficPolicyDocument", strings.ReplaceAll(err.Error(), "policy.healthroute.invalid.", "the policy record"))
	}
	return strings.ToUpper(head.RecordType), nil
}

// createTrafficPolicy makes a policy (POST .../trafficpolicy) or the next
// version of one (POST .../trafficpolicy/{id}).
func (s *Server) createTrafficPolicy(w http.ResponseWriter, r *http.Request) {
	var req createTrafficPolicyRequest
	if !decoded(w, r, &req) {
		return
	}
	st := s.state()
	id := r.PathValue("id")
	tp := &route53.TrafficPolicy{Id: id, Version: 1, Name: req.Name, Document: req.Document, Comment: req.Comment}
	root := "CreateTrafficPolicyResponse"
	if id == "" {
		if req.Name == "" || len(req.Name) > 512 {
			errInput("A traffic policy needs a Name of 1 to 512 characters").write(w)
			return
		}
		tp.Id = newCollectionID()
	} else {
		p := st.Policies[id]
		if p == nil {
			errNoPolicy(id).write(w)
			return
		}
		tp.Version, root = p.Latest+1, "CreateTrafficPolicyVersionResponse"
	}
	if len(req.Comment) > 1024 {
		errInput("A traffic policy's Comment is at most 1024 characters").write(w)
		return
	}
	typ, e := checkDocument(st, req.Document)
	if e != nil {
		e.write(w)
		return
	}
	tp.Type = typ
	if !s.proposed(w, r, &control.APICommand{APIResourceCommand: control.APIResourceCommand{CreatePolicy: tp}}, "") {
		return
	}
	if tp.Name == "" {
		tp.Name = st.Policies[id].Name
	}
	w.Header().Set("Location", "/2013-04-01/trafficpolicy/"+tp.Id+"/"+strconv.Itoa(tp.Version))
	writeXML(w, http.StatusCreated, trafficPolicyResponse{XMLName: xml.Name{Local: root}, Xmlns: Namespace, TrafficPolicy: policyXML(*tp)})
}

// policyVersion returns the policy version the request's {id} and {version} name.
func (s *Server) policyVersion(r *http.Request) (route53.TrafficPolicy, *apiError) {
	id := r.PathValue("id")
	p := s.state().Policies[id]
	if p == nil {
		return route53.TrafficPolicy{}, errNoPolicy(id)
	}
	v, err := strconv.Atoi(r.PathValue("version"))
	tp, ok := p.Versions[v]
	if err != nil || !ok {
		return route53.TrafficPolicy{}, newErr(http.StatusNotFound, control.CodeNoSuchTrafficPolicy, fmt.Sprintf("The traffic policy %s has no version %s", id, r.PathValue("version")))
	}
	return tp, nil
}

func (s *Server) getTrafficPolicy(w http.ResponseWriter, r *http.Request) {
	tp, e := s.policyVersion(r)
	if e != nil {
		e.write(w)
		return
	}
	writeXML(w, http.StatusOK, trafficPolicyResponse{XMLName: xml.Name{Local: "GetTrafficPolicyResponse"}, Xmlns: Namespace, TrafficPolicy: policyXML(tp)})
}

func (s *Server) deleteTrafficPolicy(w http.ResponseWriter, r *http.Request) {
	tp, e := s.policyVersion(r)
	if e != nil {
		e.write(w)
		return
	}
	if !s.proposed(w, r, &control.APICommand{APIResourceCommand: control.APIResourceCommand{DeletePolicy: &route53.TrafficPolicy{Id: tp.Id, Version: tp.Version}}}, "") {
		return
	}
	writeXML(w, http.StatusOK, deleteTrafficPolicyResponse{Xmlns: Namespace})
}

// listTrafficPolicies lists every policy in one page, by ID.
func (s *Server) listTrafficPolicies(w http.ResponseWriter, r *http.Request) {
	st := s.state()
	resp := listTrafficPoliciesResponse{Xmlns: Namespace, TrafficPolicySummaries: []trafficPolicySummary{}, MaxItems: strconv.Itoa(control.MaxTrafficPolicies)}
	for _, id := range slices.Sorted(maps.Keys(st.Policies)) {
		p := st.Policies[id]
		resp.TrafficPolicySummaries = append(resp.TrafficPolicySummaries, trafficPolicySummary{Id: p.Id, Name: p.Name, Type: p.Type, LatestVersion: p.Latest, TrafficPolicyCount: len(p.Versions)})
	}
	writeXML(w, http.StatusOK, resp)
}

// listTrafficPolicyVersions lists every version of a policy in one page.
func (s *Server) listTrafficPolicyVersions(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	p := s.state().Policies[id]
	if p == nil {
		errNoPolicy(id).write(w)
		return
	}
	resp := listTrafficPolicyVersionsResponse{Xmlns: Namespace, TrafficPolicies: []trafficPolicyXML{}, MaxItems: strconv.Itoa(control.MaxTrafficPolicyVersions)}
	for _, v := range slices.Sorted(maps.Keys(p.Versions)) {
		resp.TrafficPolicies = append(resp.TrafficPolicies, policyXML(p.Versions[v]))
	}
	writeXML(w, http.StatusOK, resp)
}

// updateTrafficPolicyComment changes a policy version's comment.
func (s *Server) updateTrafficPolicyComment(w http.ResponseWriter, r *http.Request) {
	tp, e := s.policyVersion(r)
	if e != nil {
		e.write(w)
		return
	}
	var req createTrafficPolicyRequest
	if !decoded(w, r, &req) {
		return
	}
	if len(req.Comment) > 1024 {
		errInput("A traffic policy's Comment is at most 1024 characters").write(w)
		return
	}
	tp.Comment = req.Comment
	if !s.proposed(w, r, &control.APICommand{APIResourceCommand: control.APIResourceCommand{PolicyComment: &tp}}, control.CodeNoSuchTrafficPolicy) {
		return
	}
	writeXML(w, http.StatusOK, trafficPolicyResponse{XMLName: xml.Name{Local: "UpdateTrafficPolicyCommentResponse"}, Xmlns: Namespace, TrafficPolicy: policyXML(tp)})
}
