package arc

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/healthroute/healthroute/control"
)

// Resource is a managed resource of zonal shift: an azaffinity record set, by
// its fully qualified lower-case name, with the AZ IDs of its az members.
type Resource struct {
	Name string
	AZs  []string
}

// ResourceARN returns the identifier of the azaffinity record set name.
func ResourceARN(name string) string { return "arn:aws:route53:::azaffinity/" + name }

// zonalShift serves zonal shift (arc-zonal-shift 2022-10-30, REST-JSON) over the
// azaffinity record sets: a shift away from an AZ makes its records answer as
// unhealthy, so AZ-affinity falls back as it does for an unhealthy AZ.
type zonalShift struct {
	be  Backend
	now func() time.Time
}

// MaxShiftListResults is the most items one list page holds (ARC's maximum).
const MaxShiftListResults = 100

var expiresInRe = regexp.MustCompile(`^([1-9][0-9]*)(m|h)$`)

// parseExpiresIn reads ARC's ExpiresIn: minutes or hours, 1 minute to 3 days.
func parseExpiresIn(s string) (time.Duration, *apiError) {
	m := expiresInRe.FindStringSubmatch(s)
	bad := errShiftValidation("InvalidExpiresIn", fmt.Sprintf("expiresIn '%s': expected minutes (30m) or hours (2h), from 1m to 72h", s))
	if m == nil {
		return 0, bad
	}
	n, err := strconv.Atoi(m[1])
	if err != nil || n > 4320 {
		return 0, bad
	}
	d := time.Duration(n) * time.Minute
	if m[2] == "h" {
		d = time.Duration(n) * time.Hour
	}
	if d > control.MaxShiftExpiry {
		return 0, bad
	}
	return d, nil
}

func errShiftValidation(reason, msg string) *apiError {
	return &apiError{status: http.StatusBadRequest, code: "ValidationException", msg: msg, fields: map[string]any{"reason": reason}}
}

func errShiftNotFound(msg string) *apiError {
	return newErr(http.StatusNotFound, "ResourceNotFoundException", msg)
}

// shiftDoc is a zonal shift as the API answers it; times are epoch seconds.
type shiftDoc struct {
	AwayFrom           string  `json:"awayFrom"`
	Comment            string  `json:"comment"`
	ExpiryTime         float64 `json:"expiryTime"`
	ResourceIdentifier string  `json:"resourceIdentifier"`
	StartTime          float64 `json:"startTime"`
	Status             string  `json:"status,omitempty"`
	AppliedStatus      string  `json:"appliedStatus,omitempty"`
	ZonalShiftID       string  `json:"zonalShiftId"`
}

func epoch(t time.Time) float64 { return float64(t.UnixMilli()) / 1000 }

func docOf(z control.ZonalShift, now time.Time) shiftDoc {
	return shiftDoc{AwayFrom: z.AwayFrom, Comment: z.Comment, ExpiryTime: epoch(z.Expiry), ResourceIdentifier: ResourceARN(z.Resource),
		StartTime: epoch(z.Start), Status: z.Status(now), ZonalShiftID: z.ID}
}

func (z *zonalShift) ServeAuthed(w http.ResponseWriter, r *http.Request, body []byte, key string) {
	path := r.URL.EscapedPath()
	var out any
	status := http.StatusOK
	var e *apiError
	seg, rest, _ := strings.Cut(strings.TrimPrefix(path, "/"), "/")
	id, err := url.PathUnescape(rest)
	if err != nil {
		errShiftValidation("InvalidResourceIdentifier", "the path's identifier is not escaped as a URI path: "+err.Error()).write(w)
		return
	}
	switch {
	case seg == "zonalshifts" && rest == "" && r.Method == http.MethodPost:
		out, e = z.start(r, key, body)
		status = http.StatusCreated
	case seg == "zonalshifts" && rest == "" && r.Method == http.MethodGet:
		out, e = z.list(r.URL.Query())
	case seg == "zonalshifts" && rest != "" && r.Method == http.MethodPatch:
		out, e = z.change(r, key, id, body, false)
	case seg == "zonalshifts" && rest != "" && r.Method == http.MethodDelete:
		out, e = z.change(r, key, id, nil, true)
	case seg == "managedresources" && rest == "" && r.Method == http.MethodGet:
		out, e = z.resources(r.URL.Query())
	case seg == "managedresources" && rest != "" && r.Method == http.MethodGet:
		out, e = z.resource(id)
	default:
		e = errShiftValidation("MissingValue", r.Method+" "+path+" is not an operation of arc-zonal-shift 2022-10-30 that this endpoint serves")
		e.code = "UnknownOperationException"
	}
	if e != nil {
		e.write(w)
		return
	}
	writeJSON(w, status, out)
}

// lookup returns the managed resource an identifier (its ARN or its name) names.
func (z *zonalShift) lookup(id string) (Resource, *apiError) {
	name := strings.TrimPrefix(id, ResourceARN(""))
	name = control.NormalizeName(name)
	if z.be.Resources != nil {
		for _, res := range z.be.Resources() {
			if res.Name == name {
				return res, nil
			}
		}
	}
	return Resource{}, errShiftNotFound("no managed resource " + id + ": expected an azaffinity record set's name or " + ResourceARN("NAME"))
}

func (z *zonalShift) node() (*control.Node, *apiError) {
	n := z.be.Node()
	if n == nil {
		return nil, newErr(http.StatusServiceUnavailable, "InternalServerException", "no replicated state: zonal shifts need a controls block")
	}
	return n, nil
}

func (z *zonalShift) start(r *http.Request, key string, body []byte) (any, *apiError) {
	var in struct{ AwayFrom, Comment, ExpiresIn, ResourceIdentifier *string }
	if e := decodeShift(body, &in); e != nil {
		return nil, e
	}
	for name, v := range map[string]*string{"awayFrom": in.AwayFrom, "comment": in.Comment, "expiresIn": in.ExpiresIn, "resourceIdentifier": in.ResourceIdentifier} {
		if v == nil {
			return nil, errShiftValidation("MissingValue", name+": missing, expected a value")
		}
	}
	if len(*in.Comment) > 128 {
		return nil, errShiftValidation("MissingValue", "comment: longer than 128 characters")
	}
	d, e := parseExpiresIn(*in.ExpiresIn)
	if e != nil {
		return nil, e
	}
	res, e := z.lookup(*in.ResourceIdentifier)
	if e != nil {
		return nil, e
	}
	az := strings.ToLower(*in.AwayFrom)
	if !slices.Contains(res.AZs, az) {
		return nil, errShiftValidation("InvalidAz", fmt.Sprintf("awayFrom '%s': expected one of the resource's Availability Zones (%s)", *in.AwayFrom, strings.Join(res.AZs, ", ")))
	}
	n, e := z.node()
	if e != nil {
		return nil, e
	}
	var b [16]byte
	rand.Read(b[:])
	h := hex.EncodeToString(b[:])
	id := h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
	cmd := &control.ShiftCommand{Start: &control.ZonalShift{ID: id, Resource: res.Name, AwayFrom: az, Comment: *in.Comment}, ExpiresIn: d}
	return z.propose(r, n, key, "arc-zonal-shift StartZonalShift "+id+" away from "+az+" on "+res.Name, cmd, id)
}

func (z *zonalShift) change(r *http.Request, key, id string, body []byte, cancel bool) (any, *apiError) {
	n, e := z.node()
	if e != nil {
		return nil, e
	}
	cmd := &control.ShiftCommand{}
	op := "CancelZonalShift"
	if cancel {
		cmd.Cancel = id
	} else {
		op = "UpdateZonalShift"
		var in struct{ Comment, ExpiresIn *string }
		if e := decodeShift(body, &in); e != nil {
			return nil, e
		}
		if in.Comment == nil && in.ExpiresIn == nil {
			return nil, errShiftValidation("MissingValue", "expected comment or expiresIn")
		}
		if in.Comment != nil && len(*in.Comment) > 128 {
			return nil, errShiftValidation("MissingValue", "comment: longer than 128 characters")
		}
		if in.ExpiresIn != nil {
			if cmd.ExpiresIn, e = parseExpiresIn(*in.ExpiresIn); e != nil {
				return nil, e
			}
		}
		cmd.Update, cmd.Comment = id, in.Comment
	}
	return z.propose(r, n, key, "arc-zonal-shift "+op+" "+id, cmd, id)
}

// propose applies cmd through the leader and answers the shift id as applied.
func (z *zonalShift) propose(r *http.Request, n *control.Node, key, reason string, cmd *control.ShiftCommand, id string) (any, *apiError) {
	err := n.Change(r.Context(), control.Request{Token: key, Member: n.Name(), Reason: reason, Shift: cmd})
	var ref *control.Refusal
	switch {
	case err == nil:
		s, _ := n.State().Shift(id)
		return docOf(s, z.now()), nil
	case errors.As(err, &ref) && (ref.Code == control.CodeShiftExists || ref.Code == control.CodeShiftNotActive):
		f := map[string]any{"reason": ref.Code}
		if len(ref.Messages) > 0 {
			f["zonalShiftId"] = ref.Messages[0]
		}
		return nil, &apiError{status: http.StatusConflict, code: "ConflictException", msg: ref.Reason, fields: f}
	case errors.As(err, &ref) && ref.Code == control.CodeNoSuchShift:
		return nil, errShiftNotFound(ref.Reason)
	case errors.As(err, &ref):
		return nil, errShiftValidation("InvalidExpiresIn", ref.Reason)
	case errors.Is(err, control.ErrNoQuorum):
		return nil, newErr(http.StatusServiceUnavailable, "InternalServerException", err.Error())
	}
	return nil, newErr(http.StatusInternalServerError, "InternalServerException", err.Error())
}

// decodeShift reads a REST-JSON body (an empty one is {}).
func decodeShift(body []byte, v any) *apiError {
	if e := decode(body, v); e != nil {
		return errShiftValidation("MissingValue", e.msg)
	}
	return nil
}

// page reads maxResults and nextToken (an offset) of a list call.
func page(q url.Values) (limit, from int, e *apiError) {
	return readPage(q, "maxResults", "nextToken", MaxShiftListResults, func(field, msg string) *apiError {
		if field == "nextToken" {
			return errShiftValidation("InvalidToken", msg)
		}
		return errShiftValidation("MissingValue", msg)
	})
}

// readPage reads a list call's page size (1 to max) and token (an offset this
// endpoint gave) from the query keys of the API's spelling.
func readPage(q url.Values, sizeKey, tokenKey string, max int, bad func(field, msg string) *apiError) (limit, from int, e *apiError) {
	limit = max
	if s := q.Get(sizeKey); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v < 1 || v > max {
			return 0, 0, bad(sizeKey, fmt.Sprintf("%s '%s': expected 1 to %d", sizeKey, s, max))
		}
		limit = v
	}
	if s := q.Get(tokenKey); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v < 0 {
			return 0, 0, bad(tokenKey, tokenKey+" '"+s+"': not a token this endpoint gave")
		}
		from = v
	}
	return limit, from, nil
}

// pageOf returns items[from:from+limit] and the next page's token ("" at the end).
func pageOf[T any](items []T, limit, from int) ([]T, string) {
	if from >= len(items) {
		return []T{}, ""
	}
	end := min(len(items), from+limit)
	if end == len(items) {
		return items[from:end], ""
	}
	return items[from:end], strconv.Itoa(end)
}

type listDoc[T any] struct {
	Items     []T    `json:"items"`
	NextToken string `json:"nextToken,omitempty"`
}

func (z *zonalShift) list(q url.Values) (any, *apiError) {
	want := q.Get("status")
	if want != "" && want != control.ShiftActive && want != control.ShiftExpired && want != control.ShiftCanceled {
		return nil, errShiftValidation("InvalidStatus", "status '"+want+"': expected ACTIVE, EXPIRED or CANCELED")
	}
	limit, from, e := page(q)
	if e != nil {
		return nil, e
	}
	var items []shiftDoc
	if n := z.be.Node(); n != nil {
		now := z.now()
		for _, s := range n.State().Shifts {
			if d := docOf(s, now); want == "" || d.Status == want {
				items = append(items, d)
			}
		}
	}
	out := listDoc[shiftDoc]{}
	out.Items, out.NextToken = pageOf(items, limit, from)
	return out, nil
}

type resourceSummary struct {
	ARN               string   `json:"arn"`
	Name              string   `json:"name"`
	AvailabilityZones []string `json:"availabilityZones"`
}

func (z *zonalShift) resources(q url.Values) (any, *apiError) {
	limit, from, e := page(q)
	if e != nil {
		return nil, e
	}
	var items []resourceSummary
	if z.be.Resources != nil {
		for _, res := range z.be.Resources() {
			items = append(items, resourceSummary{ARN: ResourceARN(res.Name), Name: res.Name, AvailabilityZones: res.AZs})
		}
	}
	out := listDoc[resourceSummary]{}
	out.Items, out.NextToken = pageOf(items, limit, from)
	return out, nil
}

func (z *zonalShift) resource(id string) (any, *apiError) {
	res, e := z.lookup(id)
	if e != nil {
		return nil, e
	}
	out := struct {
		AppliedWeights map[string]float64 `json:"appliedWeights"`
		ARN            string             `json:"arn"`
		Name           string             `json:"name"`
		ZonalShifts    []shiftDoc         `json:"zonalShifts"`
	}{AppliedWeights: map[string]float64{}, ARN: ResourceARN(res.Name), Name: res.Name, ZonalShifts: []shiftDoc{}}
	for _, az := range res.AZs {
		out.AppliedWeights[az] = 1
	}
	if n := z.be.Node(); n != nil {
		now := z.now()
		for _, s := range n.State().ActiveShifts(now) {
			if s.Resource == res.Name {
				d := docOf(s, now)
				d.Status, d.AppliedStatus = "", "APPLIED"
				out.ZonalShifts = append(out.ZonalShifts, d)
				out.AppliedWeights[s.AwayFrom] = 0
			}
		}
	}
	return out, nil
}
