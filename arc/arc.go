// Package arc serves Route 53 Application Recovery Controller's APIs over
// healthroute's replicated state (package control): the cluster API
// (route53-recovery-cluster 2019-12-02, AWS JSON 1.0) that reads and sets routing
// controls under the safety rules, and zonal shift (arc-zonal-shift 2022-10-30,
// REST-JSON) over the azaffinity record sets. Its handlers run behind the Route 53 API's
// listener (package r53api), which authenticates and paces every request first.
//
// The Corefile's routing controls all belong to one control panel, named
// PanelName; ARNs are built from the names (docs/arc-api.md).
package arc

import (
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/healthroute/healthroute/control"
	"github.com/healthroute/healthroute/r53api"
)

// PanelName is the control panel that holds the Corefile's routing controls.
const PanelName = "healthroute"

// Account is the account ID in every ARN: a healthroute fleet is one account.
const Account = "000000000000"

// arnPrefix begins every ARN of the recovery control configuration.
const arnPrefix = "arn:aws:route53-recovery-control::" + Account + ":controlpanel/"

// PanelARN returns the ARN of control panel panel.
func PanelARN(panel string) string { return arnPrefix + panel }

// ControlARN returns the ARN of routing control name of the Corefile's panel.
func ControlARN(name string) string { return ControlARNIn(PanelName, name) }

// ControlARNIn returns the ARN of routing control name of panel.
func ControlARNIn(panel, name string) string { return PanelARN(panel) + "/routingcontrol/" + name }

// RuleARN returns the ARN of safety rule name of the Corefile's panel.
func RuleARN(name string) string { return RuleARNIn(PanelName, name) }

// RuleARNIn returns the ARN of safety rule name of panel.
func RuleARNIn(panel, name string) string { return PanelARN(panel) + "/safetyrule/" + name }

// ClusterARN is the ARN of the one cluster: the fleet's voters.
const ClusterARN = "arn:aws:route53-recovery-control::" + Account + ":cluster/" + PanelName

// parseARN splits an ARN of a control panel ("" kind and name), a routing control
// (kind "routingcontrol") or a safety rule ("safetyrule"). A bare name is taken
// as one of the Corefile's panel.
func parseARN(arn string) (panel, kind, name string, ok bool) {
	if !strings.HasPrefix(arn, "arn:") {
		return PanelName, "", arn, arn != ""
	}
	rest, ok := strings.CutPrefix(arn, arnPrefix)
	if !ok {
		return "", "", "", false
	}
	f := strings.Split(rest, "/")
	switch {
	case len(f) == 1 && f[0] != "":
		return f[0], "", "", true
	case len(f) == 3 && f[0] != "" && f[2] != "":
		return f[0], f[1], f[2], true
	}
	return "", "", "", false
}

// nameOf returns the panel and name an ARN of kind ("routingcontrol",
// "safetyrule") gives; a bare name is one of the Corefile's panel.
func nameOf(arn, kind string) (panel, name string, ok bool) {
	p, k, n, ok := parseARN(arn)
	if !strings.HasPrefix(arn, "arn:") {
		k = kind
	}
	return p, n, ok && k == kind && n != ""
}

// Backend is what the handlers read and change: the replicated state's node, as
// it is now (nil while no block holds routing controls).
type Backend struct {
	Node func() *control.Node
	// Resources are the managed resources of zonal shift: the azaffinity record
	// sets with az members, sorted by name; nil: none.
	Resources func() []Resource
	// Now is the clock a shift's status is read by; nil: time.Now. (The leader's
	// clock decides changes.)
	Now func() time.Time
}

// Services returns the handlers of ARC's APIs, by signing name, for
// r53api.Backend.Services.
func Services(be Backend) map[string]r53api.AuthedHandler {
	if be.Now == nil {
		be.Now = time.Now
	}
	return map[string]r53api.AuthedHandler{
		"route53-recovery-cluster":        &cluster{be: be},
		"arc-zonal-shift":                 &zonalShift{be: be, now: be.Now},
		"route53-recovery-control-config": &config{be: be},
	}
}

// apiError is an error of ARC's APIs: a status, the exception's name and its
// fields besides the message.
type apiError struct {
	status int
	code   string
	msg    string
	fields map[string]any
}

func (e *apiError) Error() string { return e.code + ": " + e.msg }

func newErr(status int, code, msg string) *apiError {
	return &apiError{status: status, code: code, msg: msg}
}

func errValidation(reason, msg string) *apiError {
	return &apiError{status: http.StatusBadRequest, code: "ValidationException", msg: msg, fields: map[string]any{"reason": reason}}
}

func errNotFound(kind, id string) *apiError {
	return &apiError{status: http.StatusNotFound, code: "ResourceNotFoundException", msg: kind + " " + id + " does not exist",
		fields: map[string]any{"resourceId": id, "resourceType": kind}}
}

// write answers e: AWS JSON and REST-JSON clients read the code from __type
// and the X-Amzn-ErrorType header.
func (e *apiError) write(w http.ResponseWriter) {
	doc := map[string]any{"__type": e.code, "message": e.msg}
	for k, v := range e.fields {
		doc[k] = v
	}
	w.Header().Set("X-Amzn-ErrorType", e.code)
	writeJSON(w, e.status, doc)
}

// writeJSON answers status with doc.
func writeJSON(w http.ResponseWriter, status int, doc any) {
	b, err := json.Marshal(doc)
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(`{"__type":"InternalServerException","message":"encoding the answer"}`)
	}
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	w.WriteHeader(status)
	w.Write(b)
}
