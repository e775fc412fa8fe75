package r53api

import (
	"cmp"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base32"
	"encoding/xml"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/healthroute/healthroute/control"
	"github.com/healthroute/healthroute/route53"
)

// Route 53's limits of a change batch and of a listing page.
const (
	MaxChangesPerBatch = 1000
	MaxValuesPerBatch  = 1000
	MaxValueChars      = 32000
	MaxItems           = 300
)

// ZoneID returns the hosted zone ID of zone name: "Z" and 20 characters of a
// digest of the name, the same on every member.
func ZoneID(name string) string {
	sum := sha256.Sum256([]byte(control.NormalizeName(name)))
	return "Z" + base32.StdEncoding.EncodeToString(sum[:15])[:20]
}

func (s *Server) hostedZone(z Zone, st *control.APIState) hostedZone {
	n := 0
	if az := st.Zones[z.Name]; az != nil {
		n = len(az.RecordSets)
	}
	if z.ReadOnly != nil {
		n += len(z.ReadOnly.Sets)
	}
	n += len(instanceSets(st, z.Name))
	hz := hostedZone{Id: "/hostedzone/" + z.ID(), Name: z.Name, CallerReference: "healthroute " + z.Name,
		Config: zoneConfig{Comment: "served by healthroute"}, ResourceRecordSetCount: int64(n)}
	if c := z.Created; c != nil {
		hz.CallerReference, hz.Config.Comment = c.CallerReference, c.Comment
	}
	return hz
}

// sortedZones returns the zones in Route 53's order: by name, labels reversed.
func (s *Server) sortedZones() []Zone {
	zs := s.allZones()
	slices.SortFunc(zs, func(a, b Zone) int { return cmp.Compare(reversed(a.Name), reversed(b.Name)) })
	return zs
}

func (s *Server) listHostedZones(w http.ResponseWriter, r *http.Request) {
	st := s.state()
	max := maxItems(r, 100)
	marker := r.URL.Query().Get("marker")
	resp := listHostedZonesResponse{Xmlns: Namespace, Marker: marker, MaxItems: strconv.Itoa(max)}
	started := marker == ""
	for _, z := range s.sortedZones() {
		if !started {
			started = z.ID() == marker
			if !started {
				continue
			}
		}
		if len(resp.HostedZones) == max {
			resp.IsTruncated, resp.NextMarker = true, z.ID()
			break
		}
		resp.HostedZones = append(resp.HostedZones, s.hostedZone(z, st))
	}
	writeXML(w, http.StatusOK, resp)
}

func (s *Server) listHostedZonesByName(w http.ResponseWriter, r *http.Request) {
	st := s.state()
	q := r.URL.Query()
	max := maxItems(r, 100)
	resp := listHostedZonesByNameResponse{Xmlns: Namespace, DNSName: q.Get("dnsname"), HostedZoneId: q.Get("hostedzoneid"), MaxItems: strconv.Itoa(max)}
	from := ""
	if d := q.Get("dnsname"); d != "" {
		from = reversed(control.NormalizeName(d))
	}
	for _, z := range s.sortedZones() {
		if reversed(z.Name) < from {
			continue
		}
		if len(resp.HostedZones) == max {
			resp.IsTruncated, resp.NextDNSName, resp.NextHostedZoneId = true, z.Name, z.ID()
			break
		}
		resp.HostedZones = append(resp.HostedZones, s.hostedZone(z, st))
	}
	writeXML(w, http.StatusOK, resp)
}

func (s *Server) getHostedZone(w http.ResponseWriter, r *http.Request) {
	z, e := s.zone(r)
	if e != nil {
		e.write(w)
		return
	}
	writeXML(w, http.StatusOK, getHostedZoneResponse{Xmlns: Namespace, HostedZone: s.hostedZone(z, s.state())})
}

// maxItems reads the maxitems parameter: def when absent, at most MaxItems.
func maxItems(r *http.Request, def int) int {
	n, err := strconv.Atoi(r.URL.Query().Get("maxitems"))
	if err != nil || n <= 0 {
		return def
	}
	return min(n, MaxItems)
}

// reversed returns a name with its labels reversed ("www.example.org." ->
// "org.example.www"), the order of Route 53's listings.
func reversed(name string) string { return control.ReversedName(name) }

// recordOrder is a record set's place in a listing: name (labels reversed),
// type, set identifier.
type recordOrder struct{ name, typ, id string }

func orderOf(rs *route53.ResourceRecordSet) recordOrder {
	return recordOrder{reversed(control.NormalizeName(rs.Name)), strings.ToUpper(rs.Type), rs.SetIdentifier}
}

func (a recordOrder) compare(b recordOrder) int {
	return cmp.Or(cmp.Compare(a.name, b.name), cmp.Compare(a.typ, b.typ), cmp.Compare(a.id, b.id))
}

// sortedSets returns a zone's API-managed record sets in listing order.
func sortedSets(st *control.APIState, zone string) []route53.ResourceRecordSet {
	sets, _ := sortedWithOrder(st, zone)
	return sets
}

// sortedWithOrder returns a zone's record sets (the API's, and extra) in listing
// order, with each one's place.
func sortedWithOrder(st *control.APIState, zone string, extra ...route53.ResourceRecordSet) ([]route53.ResourceRecordSet, []recordOrder) {
	az := st.Zones[zone]
	if az == nil && len(extra) == 0 {
		return nil, nil
	}
	type item struct {
		o  recordOrder
		rs route53.ResourceRecordSet
	}
	items := make([]item, 0, len(extra))
	if az != nil {
		for _, s := range az.RecordSets {
			rs := s.Set()
			items = append(items, item{orderOf(&rs), rs})
		}
	}
	for _, rs := range extra {
		items = append(items, item{orderOf(&rs), rs})
	}
	slices.SortFunc(items, func(a, b item) int { return a.o.compare(b.o) })
	sets, orders := make([]route53.ResourceRecordSet, len(items)), make([]recordOrder, len(items))
	for i, it := range items {
		sets[i], orders[i] = it.rs, it.o
	}
	return sets, orders
}

// listing is a zone's sorted record sets of one state, kept while the state is
// the latest: a paginated listing reads the same state page after page.
type listing struct {
	st     *control.APIState
	zone   string
	ro     *ReadOnly
	sets   []route53.ResourceRecordSet
	orders []recordOrder
}

// listed returns the zone's sorted record sets of st, the Corefile's among them,
// sorting them once per state.
func (s *Server) listed(st *control.APIState, z Zone) *listing {
	s.mu.Lock()
	l := s.last
	s.mu.Unlock()
	if l != nil && l.st == st && l.zone == z.Name && l.ro == z.ReadOnly {
		return l
	}
	l = &listing{st: st, zone: z.Name, ro: z.ReadOnly}
	var extra []route53.ResourceRecordSet
	if z.ReadOnly != nil {
		extra = z.ReadOnly.Sets
	}
	extra = append(slices.Clip(extra), instanceSets(st, z.Name)...)
	l.sets, l.orders = sortedWithOrder(st, z.Name, extra...)
	s.mu.Lock()
	s.last = l
	s.mu.Unlock()
	return l
}

func (s *Server) listRecordSets(w http.ResponseWriter, r *http.Request) {
	z, e := s.zone(r)
	if e != nil {
		e.write(w)
		return
	}
	q := r.URL.Query()
	if q.Get("type") != "" && q.Get("name") == "" {
		errInput("The input is not valid: StartRecordType requires StartRecordName").write(w)
		return
	}
	if q.Get("identifier") != "" && q.Get("type") == "" {
		errInput("The input is not valid: StartRecordIdentifier requires StartRecordType").write(w)
		return
	}
	max := maxItems(r, MaxItems)
	l := s.listed(s.state(), z)
	sets := l.sets
	start := 0
	if n := q.Get("name"); n != "" {
		from := recordOrder{reversed(control.NormalizeName(n)), strings.ToUpper(q.Get("type")), q.Get("identifier")}
		start, _ = slices.BinarySearchFunc(l.orders, from, recordOrder.compare)
	}
	resp := listResourceRecordSetsResponse{Xmlns: Namespace, MaxItems: strconv.Itoa(max), ResourceRecordSets: []route53.ResourceRecordSet{}}
	end := min(len(sets), start+max)
	resp.ResourceRecordSets = sets[start:end]
	if end < len(sets) {
		next := sets[end]
		resp.IsTruncated, resp.NextRecordName, resp.NextRecordType, resp.NextRecordIdentifier = true, next.Name, next.Type, next.SetIdentifier
	}
	writeXML(w, http.StatusOK, resp)
}

// newChangeID returns a fresh change ID, "C" and 13 characters as Route 53's.
func newChangeID() string {
	var b [10]byte
	rand.Read(b[:])
	return "C" + base32.StdEncoding.EncodeToString(b[:])[:13]
}

func (s *Server) changeRecordSets(w http.ResponseWriter, r *http.Request) {
	z, e := s.zone(r)
	if e != nil {
		e.write(w)
		return
	}
	if s.replayedChange(w, r) {
		return
	}
	var req changeResourceRecordSetsRequest
	if err := xml.NewDecoder(r.Body).Decode(&req); err != nil {
		errInput("Invalid XML ; " + err.Error()).write(w)
		return
	}
	id, e := s.applyBatch(r.Context(), z, &req)
	if e != nil {
		if !s.replayedChange(w, r) { // decided through another member meanwhile
			e.write(w)
		}
		return
	}
	s.writeChange(w, id, func(ci changeInfo) any {
		return changeResourceRecordSetsResponse{Xmlns: Namespace, ChangeInfo: ci}
	})
}

// applyBatch checks a batch against the zone and the state, and applies it
// through the leader; it returns the change's ID.
func (s *Server) applyBatch(ctx context.Context, z Zone, req *changeResourceRecordSetsRequest) (string, *apiError) {
	if e := batchFields(req); e != nil {
		return "", e
	}
	cmd := &control.APICommand{ChangeID: newChangeID(), Comment: req.ChangeBatch.Comment, Zone: z.Name, Reserved: z.Checks,
		APIResourceCommand: control.APIResourceCommand{Created: z.Created != nil}}
	if e := checkBatch(z, req, cmd); e != nil { // refused for what it asks: sent again later, it stays refused
		s.refused(ctx)
		return "", e
	}
	// The state machine decides whether each change applies, whether a name is
	// in a hosted zone created below this one, and whether the zone still
	// converts after the batch with the API's CIDR collections and traffic
	// policy instances (control.APIState.applyZoneRecords), in the leader's
	// order; a refusal there is remembered with the request (Request).
	if e := s.propose(ctx, cmd); e != nil {
		return "", e
	}
	return cmd.ChangeID, nil
}

// checkBatch checks what a batch asks before the state is read: its size, its
// actions, that every name is in the zone and none is the Corefile's; it fills
// cmd's changes.
func checkBatch(z Zone, req *changeResourceRecordSetsRequest, cmd *control.APICommand) *apiError {
	ch := req.ChangeBatch.Changes
	if len(ch) == 0 {
		return errInput("1 validation error detected: Value null at 'changeBatch.changes' failed to satisfy constraint: Member must not be null")
	}
	if len(ch) > MaxChangesPerBatch {
		return errBatch(fmt.Sprintf("Number of changes limit of %d exceeded.", MaxChangesPerBatch))
	}
	var msgs []string
	values, chars := 0, 0
	for i, c := range ch {
		if c.ResourceRecordSet == nil {
			return errInput(fmt.Sprintf("Change %d has no ResourceRecordSet", i+1))
		}
		rs := *c.ResourceRecordSet
		if rs.Name == "" || rs.Type == "" {
			return errInput(fmt.Sprintf("Change %d: a ResourceRecordSet needs a Name and a Type", i+1))
		}
		switch c.Action {
		case "CREATE", "DELETE", "UPSERT":
		default:
			return errInput(fmt.Sprintf("1 validation error detected: Value '%s' at 'changeBatch.changes.%d.member.action' failed to satisfy constraint: Member must satisfy enum value set: [CREATE, DELETE, UPSERT]", c.Action, i+1))
		}
		rs.Name = control.NormalizeName(rs.Name)
		rs.Type = strings.ToUpper(rs.Type)
		values += len(rs.ResourceRecords)
		for _, v := range rs.ResourceRecords {
			chars += len(v.Value)
		}
		switch {
		case rs.Name != z.Name && !strings.HasSuffix(rs.Name, "."+z.Name):
			msgs = append(msgs, fmt.Sprintf("RRSet with DNS name %s is not permitted in zone %s", rs.Name, z.Name))
		case z.Corefile[rs.Name] != "":
			msgs = append(msgs, fmt.Sprintf("RRSet with DNS name %s is defined in the Corefile (%s): it is read-only through the API, change it there", rs.Name, z.Corefile[rs.Name]))
		case (rs.Type == "SOA" || rs.Type == "NS") && rs.Name == z.Name:
			msgs = append(msgs, fmt.Sprintf("RRSet of type %s with DNS name %s: the zone's SOA and apex NS are healthroute's own (the soa and ns properties), not API-managed", rs.Type, rs.Name))
		}
		cmd.Records = append(cmd.Records, control.RecordChange{Action: c.Action, RecordSet: rs})
	}
	if values > MaxValuesPerBatch {
		msgs = append(msgs, fmt.Sprintf("Number of records limit of %d exceeded.", MaxValuesPerBatch))
	}
	if chars > MaxValueChars {
		msgs = append(msgs, fmt.Sprintf("Number of characters limit of %d exceeded in the Value elements.", MaxValueChars))
	}
	if len(msgs) > 0 {
		return errBatch(msgs...)
	}
	return nil
}

// changeStatus returns the ChangeInfo of change id, or false when unknown.
func (s *Server) changeStatus(id string) (changeInfo, bool) {
	ci, ok := s.state().Change(id)
	if !ok {
		return changeInfo{}, false
	}
	status := "PENDING"
	if s.state().InSync(ci.Gen, s.members()) {
		status = "INSYNC"
	}
	return changeInfo{Id: "/change/" + ci.ID, Status: status, SubmittedAt: ci.Submitted.UTC().Format(time.RFC3339Nano), Comment: ci.Comment}, true
}

func (s *Server) writeChange(w http.ResponseWriter, id string, doc func(changeInfo) any) {
	ci, ok := s.changeStatus(id)
	if !ok { // applied at the leader, not yet here: the change is known as pending
		ci = changeInfo{Id: "/change/" + id, Status: "PENDING", SubmittedAt: time.Now().UTC().Format(time.RFC3339Nano)}
	}
	writeXML(w, http.StatusOK, doc(ci))
}

func (s *Server) getChange(w http.ResponseWriter, r *http.Request) {
	id := strings.TrimPrefix(r.PathValue("id"), "/change/")
	ci, ok := s.changeStatus(id)
	if !ok {
		newErr(http.StatusNotFound, "NoSuchChange", "A change with the specified change ID does not exist: "+id).write(w)
		return
	}
	writeXML(w, http.StatusOK, getChangeResponse{Xmlns: Namespace, ChangeInfo: ci})
}

func (s *Server) getHostedZoneCount(w http.ResponseWriter, r *http.Request) {
	writeXML(w, http.StatusOK, getHostedZoneCountResponse{Xmlns: Namespace, HostedZoneCount: int64(len(s.allZones()))})
}
