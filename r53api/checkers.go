package r53api

import (
	"encoding/xml"
	"net/http"
	"time"
)

type getHealthCheckLastFailureReasonResponse struct {
	XMLName                 xml.Name                 `xml:"GetHealthCheckLastFailureReasonResponse"`
	Xmlns                   string                   `xml:"xmlns,attr"`
	HealthCheckObservations []healthCheckObservation `xml:"HealthCheckObservations>HealthCheckObservation"`
}

type getCheckerIPRangesResponse struct {
	XMLName         xml.Name `xml:"GetCheckerIpRangesResponse"`
	Xmlns           string   `xml:"xmlns,attr"`
	CheckerIpRanges []string `xml:"CheckerIpRanges>member"`
}

// getHealthCheckLastFailureReason answers each checker's last failure reason of
// the check, as its report carries it: one observation per checker that has
// failed, "Failure: " and the reason; CheckedTime is the checker's latest probe
// known here (a reason is kept once probes pass, as Route 53 keeps it).
func (s *Server) getHealthCheckLastFailureReason(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if s.state().HealthChecks[id] == nil {
		errNoCheck(id).write(w)
		return
	}
	resp := getHealthCheckLastFailureReasonResponse{Xmlns: Namespace, HealthCheckObservations: []healthCheckObservation{}}
	if s.be.Status != nil {
		for _, o := range s.be.Status(id) {
			if o.Reason == "" {
				continue
			}
			resp.HealthCheckObservations = append(resp.HealthCheckObservations, healthCheckObservation{Region: o.Checker, IPAddress: o.Addr,
				StatusReport: statusReport{Status: "Failure: " + o.Reason, CheckedTime: o.At.UTC().Format(time.RFC3339Nano)}})
		}
	}
	writeXML(w, http.StatusOK, resp)
}

// getCheckerIPRanges answers the fleet's checkers' addresses, as prefixes.
func (s *Server) getCheckerIPRanges(w http.ResponseWriter, r *http.Request) {
	resp := getCheckerIPRangesResponse{Xmlns: Namespace, CheckerIpRanges: []string{}}
	if s.be.CheckerIPs != nil {
		for _, p := range s.be.CheckerIPs() {
			resp.CheckerIpRanges = append(resp.CheckerIpRanges, p.String())
		}
	}
	writeXML(w, http.StatusOK, resp)
}
