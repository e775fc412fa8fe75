package r53api

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/healthroute/healthroute/control"
)

// Route 53's clock-skew limit: a request signed further from the server's clock
// than this is refused.
const MaxSkew = 5 * time.Minute

const sigAlgorithm = "AWS4-HMAC-SHA256"

// OtherServices are the signing names besides route53 that a listener
// authenticates and hands to Backend.Services: Route 53 ARC's APIs.
var OtherServices = []string{"route53-recovery-cluster", "route53-recovery-control-config", "arc-zonal-shift"}

// verifier checks AWS Signature Version 4 on requests, against the keys of a
// keyring. Whether a request was seen before is the replicated state's to say,
// and only for requests that ask for a change (replay.go).
type verifier struct {
	keys *keyring
	now  func() time.Time
}

func newVerifier(k *keyring, now func() time.Time) *verifier {
	return &verifier{keys: k, now: now}
}

// authHeader is a parsed Authorization header.
type authHeader struct {
	keyID, date, region, service string
	signed                       []string
	signature                    string
}

func parseAuth(h string) (authHeader, *apiError) {
	var a authHeader
	alg, rest, _ := strings.Cut(h, " ")
	if alg != sigAlgorithm {
		return a, errIncompleteSignature(fmt.Sprintf("Authorization header requires the %s algorithm, got '%s'", sigAlgorithm, alg))
	}
	for _, part := range strings.Split(rest, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(part), "=")
		switch k {
		case "Credential":
			f := strings.Split(v, "/")
			if len(f) != 5 || f[4] != "aws4_request" {
				return a, errIncompleteSignature("Credential should be scoped to a valid region, service and date: expected ACCESS_KEY/DATE/REGION/route53/aws4_request")
			}
			a.keyID, a.date, a.region, a.service = f[0], f[1], f[2], f[3]
		case "SignedHeaders":
			a.signed = strings.Split(v, ";")
		case "Signature":
			a.signature = v
		}
	}
	if a.keyID == "" || len(a.signed) == 0 || a.signature == "" {
		return a, errIncompleteSignature("Authorization header requires 'Credential', 'SignedHeaders' and 'Signature' parameters")
	}
	return a, nil
}

// verify checks r's signature over body. It returns the access key's name (its
// ID) and the request's identity (its signature's digest and signed time), or
// the error to answer with. The signature covers the body's SHA-256 (an unsigned
// payload is accepted only without a body), so two requests with one signature
// are the same request, signed by the same key in the same second.
func (v *verifier) verify(r *http.Request, body []byte) (string, *control.APIRequest, *apiError) {
	h := r.Header.Get("Authorization")
	if h == "" {
		if r.URL.Query().Get("X-Amz-Signature") != "" {
			return "", nil, errAccessDenied("presigned URLs are not supported; sign the Authorization header")
		}
		return "", nil, errMissingToken()
	}
	a, e := parseAuth(h)
	if e != nil {
		return "", nil, e
	}
	if a.service != "route53" && !slices.Contains(OtherServices, a.service) {
		return "", nil, errSignature(fmt.Sprintf("Credential should be scoped to correct service: 'route53', got '%s'", a.service))
	}
	secret, ok := v.keys.secret(a.keyID)
	if !ok {
		return "", nil, errInvalidToken()
	}
	stamp := r.Header.Get("X-Amz-Date")
	if stamp == "" {
		stamp = r.Header.Get("Date")
	}
	at, err := time.Parse("20060102T150405Z", stamp)
	if err != nil {
		return "", nil, errIncompleteSignature("Authorization header requires existence of either a 'X-Amz-Date' or a 'Date' header (as 20060102T150405Z)")
	}
	now := v.now()
	if d := now.Sub(at); d > MaxSkew || d < -MaxSkew {
		return "", nil, errSignature(fmt.Sprintf("Signature expired: %s is now earlier than %s (%s - 5 min.)", stamp,
			now.Add(-MaxSkew).UTC().Format("20060102T150405Z"), now.UTC().Format("20060102T150405Z")))
	}
	if a.date != at.Format("20060102") {
		return "", nil, errSignature("Date in Credential scope does not match YYYYMMDD from ISO-8601 version of date from HTTP")
	}
	if !slices.Contains(a.signed, "host") {
		return "", nil, errSignature("'Host' must be a 'SignedHeader' in the AWS Authorization.")
	}
	payload := r.Header.Get("X-Amz-Content-Sha256")
	sum := sha256.Sum256(body)
	if payload == "" || payload != "UNSIGNED-PAYLOAD" && payload != hex.EncodeToString(sum[:]) {
		payload = hex.EncodeToString(sum[:])
	}
	if payload == "UNSIGNED-PAYLOAD" && len(body) > 0 {
		return "", nil, errSignature("an unsigned payload is not accepted: sign the request body")
	}
	creq := canonicalRequest(r, a.signed, payload)
	scope := strings.Join([]string{a.date, a.region, a.service, "aws4_request"}, "/")
	crsum := sha256.Sum256([]byte(creq))
	toSign := sigAlgorithm + "\n" + stamp + "\n" + scope + "\n" + hex.EncodeToString(crsum[:])
	key := hmacSHA256([]byte("AWS4"+secret), a.date)
	for _, s := range []string{a.region, a.service, "aws4_request"} {
		key = hmacSHA256(key, s)
	}
	want := hex.EncodeToString(hmacSHA256(key, toSign))
	if !hmac.Equal([]byte(want), []byte(a.signature)) {
		return "", nil, errSignature("The request signature we calculated does not match the signature you provided. Check your AWS Secret Access Key and signing method. Consult the service documentation for details.")
	}
	digest := sha256.Sum256([]byte(a.signature))
	return a.keyID, &control.APIRequest{Digest: hex.EncodeToString(digest[:16]), Signed: at}, nil
}

func hmacSHA256(key []byte, s string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(s))
	return m.Sum(nil)
}

// canonicalRequest builds SigV4's canonical request of r.
func canonicalRequest(r *http.Request, signed []string, payload string) string {
	var b strings.Builder
	b.WriteString(r.Method + "\n")
	b.WriteString(canonicalPath(r.URL) + "\n")
	b.WriteString(canonicalQuery(r.URL.Query()) + "\n")
	for _, h := range signed {
		var v string
		if h == "host" {
			v = r.Host
		} else {
			vals := r.Header.Values(http.CanonicalHeaderKey(h))
			for i := range vals {
				vals[i] = strings.Join(strings.Fields(vals[i]), " ")
			}
			v = strings.Join(vals, ",")
		}
		b.WriteString(h + ":" + v + "\n")
	}
	b.WriteString("\n" + strings.Join(signed, ";") + "\n" + payload)
	return b.String()
}

// canonicalPath is the URI path, each segment escaped as SigV4 escapes it (twice
// for services other than S3: the path as sent, escaped again).
func canonicalPath(u *url.URL) string {
	p := u.EscapedPath()
	if p == "" {
		return "/"
	}
	segs := strings.Split(p, "/")
	for i, s := range segs {
		segs[i] = escape(s)
	}
	return strings.Join(segs, "/")
}

func canonicalQuery(q url.Values) string {
	var parts []string
	for k, vs := range q {
		for _, v := range vs {
			parts = append(parts, escape(k)+"="+escape(v))
		}
	}
	slices.Sort(parts)
	return strings.Join(parts, "&")
}

// escape is SigV4's URI encoding: everything but A-Z a-z 0-9 - _ . ~ as %XX.
func escape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.' || c == '~' {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}
