package r53api

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"encoding/xml"
	"net/http"
	"slices"
	"strings"
)

// apiError is an error answered as Route 53 answers it: an HTTP status and the
// ErrorResponse document. A refused change batch's message lists every change's
// message between brackets, as Route 53 writes it ("[msg1, msg2]").
type apiError struct {
	status  int
	code    string
	message string
}

func (e *apiError) Error() string { return e.code + ": " + e.message }

func newErr(status int, code, msg string) *apiError {
	return &apiError{status: status, code: code, message: msg}
}

func errMissingToken() *apiError {
	return newErr(http.StatusForbidden, "MissingAuthenticationToken", "Missing Authentication Token")
}

func errInvalidToken() *apiError {
	return newErr(http.StatusForbidden, "InvalidClientTokenId", "The security token included in the request is invalid.")
}

func errSignature(msg string) *apiError {
	return newErr(http.StatusForbidden, "SignatureDoesNotMatch", msg)
}

func errIncompleteSignature(msg string) *apiError {
	return newErr(http.StatusForbidden, "IncompleteSignature", msg)
}

func errAccessDenied(msg string) *apiError {
	return newErr(http.StatusForbidden, "AccessDenied", msg)
}

func errInput(msg string) *apiError { return newErr(http.StatusBadRequest, "InvalidInput", msg) }

func errBatch(msgs ...string) *apiError {
	return &apiError{status: http.StatusBadRequest, code: "InvalidChangeBatch", message: "[" + strings.Join(msgs, ", ") + "]"}
}

func errNoZone(id string) *apiError {
	return newErr(http.StatusNotFound, "NoSuchHostedZone", "No hosted zone found with ID: "+id)
}

func errNoCheck(id string) *apiError {
	return newErr(http.StatusNotFound, "NoSuchHealthCheck", "No health check exists with the specified ID "+id)
}

// requestID returns a fresh request ID, in the form Route 53 gives its own.
func requestID() string {
	var b [16]byte
	rand.Read(b[:])
	h := hex.EncodeToString(b[:])
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// write answers e.
func (e *apiError) write(w http.ResponseWriter) {
	id := requestID()
	w.Header().Set("X-Amzn-Requestid", id)
	typ := "Sender"
	if e.status >= 500 {
		typ = "Receiver"
	}
	writeXML(w, e.status, errorResponse{Xmlns: Namespace, Error: errorBody{Type: typ, Code: e.code, Message: e.message}, RequestId: id})
}

// signedService is the service r's credential scope names when it is one of
// OtherServices (or, unsigned, the one its X-Amz-Target or path belongs to), else
// "route53": it picks the shape errors are answered in before r is verified.
func signedService(r *http.Request) string {
	if a, e := parseAuth(r.Header.Get("Authorization")); e == nil && slices.Contains(OtherServices, a.service) {
		return a.service
	}
	switch {
	case strings.HasPrefix(r.Header.Get("X-Amz-Target"), "ToggleCustomerAPI."):
		return "route53-recovery-cluster"
	case strings.HasPrefix(r.URL.Path, "/2013-04-01/"):
		return "route53"
	case strings.HasPrefix(r.URL.Path, "/zonalshifts"), strings.HasPrefix(r.URL.Path, "/managedresources"):
		return "arc-zonal-shift"
	case strings.HasPrefix(r.URL.Path, "/controlpanel"), strings.HasPrefix(r.URL.Path, "/routingcontrol"),
		strings.HasPrefix(r.URL.Path, "/safetyrule"), strings.HasPrefix(r.URL.Path, "/cluster"):
		return "route53-recovery-control-config"
	}
	return "route53"
}

// jsonCodes are the codes of the JSON services for the listener's own errors.
var jsonCodes = map[string]string{
	"MissingAuthenticationToken": "MissingAuthenticationTokenException",
	"InvalidClientTokenId":       "UnrecognizedClientException",
	"SignatureDoesNotMatch":      "InvalidSignatureException",
	"IncompleteSignature":        "IncompleteSignatureException",
	"AccessDenied":               "AccessDeniedException",
	"Throttling":                 "ThrottlingException",
	"InvalidInput":               "ValidationException",
	"UnknownOperation":           "UnknownOperationException",
}

// answer answers e in the shape of service svc: Route 53's XML, or the JSON of
// ARC's services (AWS JSON and REST-JSON both read the code from the body's
// __type and the X-Amzn-ErrorType header).
func (e *apiError) answer(w http.ResponseWriter, svc string) {
	if svc == "route53" {
		e.write(w)
		return
	}
	code := e.code
	if c, ok := jsonCodes[code]; ok {
		code = c
	}
	if e.code == "Throttling" {
		e.status = http.StatusTooManyRequests
	}
	b, _ := json.Marshal(map[string]string{"__type": code, "message": e.message})
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	w.Header().Set("X-Amzn-ErrorType", code)
	w.Header().Set("X-Amzn-Requestid", requestID())
	w.WriteHeader(e.status)
	w.Write(b)
}

// writeXML answers status with doc.
func writeXML(w http.ResponseWriter, status int, doc any) {
	b, err := xml.Marshal(doc)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/xml")
	if w.Header().Get("X-Amzn-Requestid") == "" {
		w.Header().Set("X-Amzn-Requestid", requestID())
	}
	w.WriteHeader(status)
	w.Write([]byte(xml.Header))
	w.Write(b)
}
