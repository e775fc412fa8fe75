package r53api

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/xml"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/healthroute/healthroute/control"
	"github.com/healthroute/healthroute/route53"
)

// newCheckID returns a fresh health check ID, a UUID as Route 53's.
func newCheckID() string {
	var b [16]byte
	rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

func checkXML(hc *control.APIHealthCheck) healthCheckXML {
	return healthCheckXML{Id: hc.Id, CallerReference: hc.CallerReference, HealthCheckConfig: hc.HealthCheckConfig, HealthCheckVersion: hc.Version}
}

// checkConfig refuses a health check the importer could not convert: it is
// converted alone, as a record set's check.
func checkConfig(hc route53.HealthCheck, st *control.APIState) *apiError {
	var checks []route53.HealthCheck
	for _, id := range slices.Sorted(maps.Keys(st.HealthChecks)) {
		if id != hc.Id {
			checks = append(checks, st.HealthChecks[id].HealthCheck)
		}
	}
	checks = append(checks, hc)
	one := int64(1)
	probe := route53.ResourceRecordSet{Name: "check.invalid.", Type: "A", SetIdentifier: "check", Weight: &one, TTL: &one,
		ResourceRecords: []route53.ResourceRecord{{Value: "192.0.2.1"}}, HealthCheckId: hc.Id}
	if _, err := route53.Convert(route53.Input{Zone: "invalid.", RecordSets: []route53.ResourceRecordSet{probe}, HealthChecks: checks}); err != nil {
		msg := err.Error()
		if i := strings.Index(msg, "health check "); i >= 0 {
			msg = msg[i:]
		}
		return errInput("The health check is not valid: " + msg)
	}
	return nil
}

func (s *Server) createHealthCheck(w http.ResponseWriter, r *http.Request) {
	var req createHealthCheckRequest
	if err := xml.NewDecoder(r.Body).Decode(&req); err != nil {
		errInput("Invalid XML ; " + err.Error()).write(w)
		return
	}
	if req.CallerReference == "" || req.HealthCheckConfig == nil {
		errInput("CreateHealthCheck needs a CallerReference and a HealthCheckConfig").write(w)
		return
	}
	if e := checkFields(req.CallerReference, req.HealthCheckConfig, true); e != nil {
		e.write(w)
		return
	}
	st := s.state()
	for _, have := range st.HealthChecks { // the same request again returns the same check, as on Route 53
		if have.CallerReference == req.CallerReference {
			if same(have.HealthCheckConfig, *req.HealthCheckConfig) {
				writeXML(w, http.StatusCreated, createHealthCheckResponse{Xmlns: Namespace, HealthCheck: checkXML(have)})
				return
			}
			newErr(http.StatusConflict, control.CodeHealthCheckExists, fmt.Sprintf("A health check with the caller reference %s already exists (%s) with another configuration", req.CallerReference, have.Id)).write(w)
			return
		}
	}
	hc := &control.APIHealthCheck{HealthCheck: route53.HealthCheck{Id: newCheckID(), HealthCheckConfig: *req.HealthCheckConfig}, CallerReference: req.CallerReference}
	if e := checkConfig(hc.HealthCheck, st); e != nil {
		e.write(w)
		return
	}
	if e := s.propose(r.Context(), &control.APICommand{ChangeID: newChangeID(), CreateCheck: hc}); e != nil {
		e.write(w)
		return
	}
	got := s.state().HealthChecks[hc.Id]
	if got == nil {
		hc.Version = 1
		got = hc
	}
	w.Header().Set("Location", "https://route53.amazonaws.com/2013-04-01/healthcheck/"+hc.Id)
	writeXML(w, http.StatusCreated, createHealthCheckResponse{Xmlns: Namespace, HealthCheck: checkXML(got)})
}

func same(a, b route53.HealthCheckConfig) bool {
	x, _ := xml.Marshal(a)
	y, _ := xml.Marshal(b)
	return string(x) == string(y)
}

func (s *Server) getHealthCheck(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	hc := s.state().HealthChecks[id]
	if hc == nil {
		errNoCheck(id).write(w)
		return
	}
	writeXML(w, http.StatusOK, getHealthCheckResponse{Xmlns: Namespace, HealthCheck: checkXML(hc)})
}

func (s *Server) listHealthChecks(w http.ResponseWriter, r *http.Request) {
	st := s.state()
	max := maxItems(r, 100)
	marker := r.URL.Query().Get("marker")
	resp := listHealthChecksResponse{Xmlns: Namespace, Marker: marker, MaxItems: strconv.Itoa(max), HealthChecks: []healthCheckXML{}}
	for _, id := range slices.Sorted(maps.Keys(st.HealthChecks)) {
		if id < marker {
			continue
		}
		if len(resp.HealthChecks) == max {
			resp.IsTruncated, resp.NextMarker = true, id
			break
		}
		resp.HealthChecks = append(resp.HealthChecks, checkXML(st.HealthChecks[id]))
	}
	writeXML(w, http.StatusOK, resp)
}

func (s *Server) updateHealthCheck(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	var req updateHealthCheckRequest
	if err := xml.NewDecoder(r.Body).Decode(&req); err != nil {
		errInput("Invalid XML ; " + err.Error()).write(w)
		return
	}
	st := s.state()
	have := st.HealthChecks[id]
	if have == nil {
		errNoCheck(id).write(w)
		return
	}
	hc := *have
	if e := req.apply(&hc.HealthCheckConfig); e != nil {
		e.write(w)
		return
	}
	if e := checkFields("", &hc.HealthCheckConfig, false); e != nil {
		e.write(w)
		return
	}
	if req.HealthCheckVersion != nil {
		hc.Version = *req.HealthCheckVersion
	} else {
		hc.Version = 0
	}
	if e := checkConfig(hc.HealthCheck, st); e != nil {
		e.write(w)
		return
	}
	if e := s.propose(r.Context(), &control.APICommand{ChangeID: newChangeID(), UpdateCheck: &hc}); e != nil {
		e.write(w)
		return
	}
	writeXML(w, http.StatusOK, updateHealthCheckResponse{Xmlns: Namespace, HealthCheck: checkXML(s.state().HealthChecks[id])})
}

// apply changes c by the fields the request gives.
func (u *updateHealthCheckRequest) apply(c *route53.HealthCheckConfig) *apiError {
	for _, e := range u.ResetElements {
		switch e {
		case "FullyQualifiedDomainName":
			c.FullyQualifiedDomainName = ""
		case "Regions":
			c.Regions = nil
		case "ResourcePath":
			c.ResourcePath = ""
		case "ChildHealthChecks":
			c.ChildHealthChecks = nil
		default:
			return errInput(fmt.Sprintf("ResetElements: '%s', expected FullyQualifiedDomainName, Regions, ResourcePath or ChildHealthChecks", e))
		}
	}
	set := func(dst *string, v *string) {
		if v != nil {
			*dst = *v
		}
	}
	set(&c.IPAddress, u.IPAddress)
	set(&c.ResourcePath, u.ResourcePath)
	set(&c.FullyQualifiedDomainName, u.FullyQualifiedDomainName)
	set(&c.SearchString, u.SearchString)
	set(&c.InsufficientDataHealthStatus, u.InsufficientDataHealthStatus)
	if u.Port != nil {
		c.Port = u.Port
	}
	if u.FailureThreshold != nil {
		c.FailureThreshold = u.FailureThreshold
	}
	if u.HealthThreshold != nil {
		c.HealthThreshold = u.HealthThreshold
	}
	if u.EnableSNI != nil {
		c.EnableSNI = u.EnableSNI
	}
	if u.Inverted != nil {
		c.Inverted = *u.Inverted
	}
	if u.Disabled != nil {
		c.Disabled = *u.Disabled
	}
	if u.ChildHealthChecks != nil {
		c.ChildHealthChecks = *u.ChildHealthChecks
	}
	if u.Regions != nil {
		c.Regions = *u.Regions
	}
	return nil
}

func (s *Server) deleteHealthCheck(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if e := s.propose(r.Context(), &control.APICommand{ChangeID: newChangeID(), DeleteCheck: id}); e != nil {
		e.write(w)
		return
	}
	writeXML(w, http.StatusOK, deleteHealthCheckResponse{Xmlns: Namespace})
}

func (s *Server) getHealthCheckStatus(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if s.state().HealthChecks[id] == nil {
		errNoCheck(id).write(w)
		return
	}
	resp := getHealthCheckStatusResponse{Xmlns: Namespace, HealthCheckObservations: []healthCheckObservation{}}
	if s.be.Status != nil {
		for _, o := range s.be.Status(id) {
			status := "Failure: " + o.Detail
			if o.Healthy {
				status = "Success: " + o.Detail
			}
			resp.HealthCheckObservations = append(resp.HealthCheckObservations, healthCheckObservation{Region: o.Checker, IPAddress: o.Addr,
				StatusReport: statusReport{Status: strings.TrimSuffix(status, ": "), CheckedTime: o.At.UTC().Format(time.RFC3339Nano)}})
		}
	}
	writeXML(w, http.StatusOK, resp)
}

func (s *Server) getHealthCheckCount(w http.ResponseWriter, r *http.Request) {
	writeXML(w, http.StatusOK, getHealthCheckCountResponse{Xmlns: Namespace, HealthCheckCount: int64(len(s.state().HealthChecks))})
}
