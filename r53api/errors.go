package r53api

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/xml"
	"net/http"
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
