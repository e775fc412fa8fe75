package control

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/healthroute/healthroute/route53"
)

// MaxChanges is how many API change records (GetChange) the state keeps, newest last.
const MaxChanges = 1000

// Route 53 error codes a refused API command carries (Refusal.Code).
const (
	CodeInvalidChangeBatch  = "InvalidChangeBatch"
	CodeNoSuchHostedZone    = "NoSuchHostedZone"
	CodeNoSuchHealthCheck   = "NoSuchHealthCheck"
	CodeHealthCheckInUse    = "HealthCheckInUse"
	CodeHealthCheckExists   = "HealthCheckAlreadyExists"
	CodeHealthCheckVersion  = "HealthCheckVersionMismatch"
	CodeInvalidInput        = "InvalidInput"
	CodeNoSuchChange        = "NoSuchChange"
	CodeTooManyHealthChecks = "TooManyHealthChecks"
)

// APIState is what the Route 53-compatible API manages: the record sets of each
// zone that enables it, the health checks, their tags, the change log, and which
// generation of it each member answers from. Gen is the raft index of the last
// command that changed a record set or a health check.
type APIState struct {
	Gen          uint64                       `json:"gen"`
	Zones        map[string]*APIZone          `json:"zones,omitempty"`         // by zone name, fully qualified, lower case
	HealthChecks map[string]*APIHealthCheck   `json:"health_checks,omitempty"` // by ID
	Tags         map[string]map[string]string `json:"tags,omitempty"`          // by "healthcheck/ID" or "hostedzone/ID"
	Changes      []APIChangeInfo              `json:"changes,omitempty"`       // newest last
	Serves       map[string]uint64            `json:"serves,omitempty"`        // member -> the Gen its DNS answers come from
	Replays      *Replays                     `json:"replays,omitempty"`       // the signed requests decided (api_replay.go)
	APIResources
}

// APIZone is one zone's API-managed record sets, by RecordKey.
type APIZone struct {
	RecordSets map[string]StoredSet `json:"record_sets"`
}

// APIHealthCheck is an API-managed health check.
type APIHealthCheck struct {
	route53.HealthCheck
	CallerReference string `json:"caller_reference"`
	Version         int64  `json:"version"`
}

// APIChangeInfo is one applied change, for GetChange.
type APIChangeInfo struct {
	ID        string    `json:"id"`
	Submitted time.Time `json:"submitted"`
	Gen       uint64    `json:"gen"` // INSYNC once every voter serves it
	Comment   string    `json:"comment,omitempty"`
}

// RecordChange is one Change of a ChangeResourceRecordSets batch.
type RecordChange struct {
	Action    string                    `json:"action"` // CREATE, DELETE or UPSERT
	RecordSet route53.ResourceRecordSet `json:"record_set"`
}

// TagChange adds and removes tags of one resource.
type TagChange struct {
	Resource string            `json:"resource"` // "healthcheck/ID" or "hostedzone/ID"
	Add      map[string]string `json:"add,omitempty"`
	Remove   []string          `json:"remove,omitempty"`
}

// APICommand is one API call that changes the state. Exactly one part is set.
type APICommand struct {
	ChangeID    string          `json:"change_id,omitempty"` // the ID GetChange will know the batch by
	Comment     string          `json:"comment,omitempty"`
	Zone        string          `json:"zone,omitempty"`
	Records     []RecordChange  `json:"records,omitempty"`
	CreateCheck *APIHealthCheck `json:"create_check,omitempty"`
	UpdateCheck *APIHealthCheck `json:"update_check,omitempty"` // Version: the version it updates
	DeleteCheck string          `json:"delete_check,omitempty"`
	Tags        *TagChange      `json:"tags,omitempty"`
	Serve       uint64          `json:"serve,omitempty"`   // Command.Member answers from this Gen
	Request     *APIRequest     `json:"request,omitempty"` // the signed request it came from: decided once
	// Reserved are the names of the Corefile's checks of a batch's zone, which API
	// health checks may not take (the member the batch came through names them).
	Reserved []string `json:"reserved,omitempty"`
	APIResourceCommand
}

// RecordKey identifies a record set in its zone: name, type and set identifier.
func RecordKey(rs *route53.ResourceRecordSet) string {
	return NormalizeName(rs.Name) + "\x00" + strings.ToUpper(rs.Type) + "\x00" + rs.SetIdentifier
}

// NormalizeName returns a domain name lower case and fully qualified, with
// Route 53's octal escape of '*' undone.
func NormalizeName(n string) string {
	n = strings.ToLower(strings.ReplaceAll(n, `\052`, "*"))
	if !strings.HasSuffix(n, ".") {
		n += "."
	}
	return n
}

// apiRefusal is a refused API command with its Route 53 error code.
func apiRefusal(code, format string, args ...any) *Refusal {
	return &Refusal{Code: code, Reason: fmt.Sprintf(format, args...)}
}

// clone returns a copy of a (nil stays nil) that a command may change; record
// sets and checks are values replaced whole, never changed in place, so the maps
// are copied one level. A zone's record sets are shared until a batch changes
// them (applyRecords copies that zone's): a command costs nothing in the size of
// the zones it leaves alone.
func (a *APIState) clone() *APIState {
	if a == nil {
		return nil
	}
	c := *a
	c.Zones = maps.Clone(a.Zones)
	c.HealthChecks = maps.Clone(a.HealthChecks)
	c.Tags = make(map[string]map[string]string, len(a.Tags))
	for r, t := range a.Tags {
		c.Tags[r] = maps.Clone(t)
	}
	c.Changes = slices.Clone(a.Changes)
	c.Serves = maps.Clone(a.Serves)
	c.APIResources = a.APIResources.clone()
	return &c
}

// applyAPI decides and applies an API command at raft index index: a refused
// command changes nothing.
func (s *State) applyAPI(index uint64, cmd *Command) error {
	a := s.API.clone()
	if a == nil {
		a = &APIState{}
	}
	if a.Zones == nil {
		a.Zones = map[string]*APIZone{}
	}
	if a.HealthChecks == nil {
		a.HealthChecks = map[string]*APIHealthCheck{}
	}
	if a.Tags == nil {
		a.Tags = map[string]map[string]string{}
	}
	if a.Serves == nil {
		a.Serves = map[string]uint64{}
	}
	c := cmd.API
	if err := a.checkSigned(c.Request); err != nil {
		return err
	}
	var err error
	data := true // the command changes what DNS answers
	switch {
	case c.Serve > 0:
		data = false
		if c.Serve > a.Serves[cmd.Member] {
			a.Serves[cmd.Member] = c.Serve
		}
	case c.Zone != "":
		err = a.applyZoneRecords(c)
	case c.APIResourceCommand.set():
		err = a.applyResources(c)
	case c.CreateCheck != nil:
		err = a.createCheck(c.CreateCheck)
	case c.UpdateCheck != nil:
		err = a.updateCheck(c.UpdateCheck)
	case c.DeleteCheck != "":
		err = a.deleteCheck(c.DeleteCheck)
	case c.Tags != nil:
		data = false
		err = a.changeTags(c.Tags)
	default:
		err = apiRefusal(CodeInvalidInput, "an API command that changes nothing")
	}
	if err != nil {
		if c.Request != nil { // refused, and remembered: sent again later, it must not apply either
			if s.API != nil {
				kept := *s.API
				a = &kept
			} else {
				a = &APIState{}
			}
			a.Replays = a.remember(c.Request, "", cmd.Time)
			s.API = a
		}
		return err
	}
	if c.Request != nil {
		a.Replays = a.remember(c.Request, answerOf(c), cmd.Time)
	}
	if data {
		a.Gen = index
		if c.ChangeID != "" {
			a.Changes = append(a.Changes, APIChangeInfo{ID: c.ChangeID, Submitted: cmd.Time, Gen: index, Comment: c.Comment})
			if n := len(a.Changes) - MaxChanges; n > 0 {
				a.Changes = slices.Delete(a.Changes, 0, n)
			}
		}
	}
	s.API = a
	return nil
}

// applyRecords applies a ChangeResourceRecordSets batch, whole or not at all,
// refusing it with Route 53's messages.
func (a *APIState) applyRecords(c *APICommand) error {
	z := &APIZone{RecordSets: map[string]StoredSet{}}
	var held map[string]StoredSet         // as before the batch
	if hz := a.Zones[c.Zone]; hz != nil { // shared with the state before (clone)
		held = hz.RecordSets
		z.RecordSets = maps.Clone(held)
	}
	a.Zones[c.Zone] = z
	var msgs []string
	for _, ch := range c.Records {
		rs := ch.RecordSet
		rs.Name = NormalizeName(rs.Name)
		k := RecordKey(&rs)
		have, exists := z.RecordSets[k]
		switch ch.Action {
		case "CREATE":
			if exists {
				msgs = append(msgs, fmt.Sprintf("Tried to create resource record set [name='%s', type='%s'%s] but it already exists", rs.Name, rs.Type, setIDPart(rs)))
				continue
			}
			z.RecordSets[k] = StoreSet(rs)
		case "UPSERT":
			z.RecordSets[k] = StoreSet(rs)
		case "DELETE":
			if !exists {
				msgs = append(msgs, fmt.Sprintf("Tried to delete resource record set [name='%s', type='%s'%s] but it was not found", rs.Name, rs.Type, setIDPart(rs)))
				continue
			}
			if !sameRecordSet(have.Set(), rs) {
				msgs = append(msgs, fmt.Sprintf("Tried to delete resource record set [name='%s', type='%s'%s] but the values provided do not match the current values", rs.Name, rs.Type, setIDPart(rs)))
				continue
			}
			delete(z.RecordSets, k)
		default:
			msgs = append(msgs, fmt.Sprintf("Invalid action '%s', expected CREATE, DELETE or UPSERT", ch.Action))
		}
		if id := rs.HealthCheckId; id != "" && ch.Action != "DELETE" && a.HealthChecks[id] == nil {
			msgs = append(msgs, fmt.Sprintf("Invalid health check ID %s for resource record set [name='%s', type='%s'%s]: no such health check", id, rs.Name, rs.Type, setIDPart(rs)))
		}
	}
	if len(msgs) > 0 {
		return &Refusal{Code: CodeInvalidChangeBatch, Reason: strings.Join(msgs, "\n"), Messages: msgs}
	}
	if len(z.RecordSets) == 0 {
		delete(a.Zones, c.Zone)
	}
	sets := affected(held, z.RecordSets, c.Records)
	if err := a.convert(c.Zone, sets, c.Reserved); err != nil {
		return &Refusal{Code: CodeInvalidChangeBatch, Reason: err.Error(), Messages: []string{err.Error()}}
	}
	return nil
}

// Convertible returns why the importer could not convert zone's record sets, the
// whole zone (nil when it can). reserved are the names of the Corefile's checks,
// which API health checks may not take.
func (a *APIState) Convertible(zone string, reserved []string) error {
	z := a.Zones[zone]
	if z == nil {
		return nil
	}
	sets := make([]route53.ResourceRecordSet, 0, len(z.RecordSets))
	for _, s := range z.RecordSets {
		sets = append(sets, s.Set())
	}
	return a.convert(zone, sets, reserved)
}

// convert returns why the importer could not convert sets, record sets of zone,
// with the API's health checks (nil when it can). A batch after which the sets it
// affects could not be converted is refused inside the state machine
// (applyRecords), in the leader's order of commands, so two batches racing
// through two members cannot together leave a zone no member can answer from.
// sets are converted in listing order, so the importer reports the same first
// error on every member.
// The zone's traffic policy instances (policy records) are converted with them,
// with the API's traffic policies and CIDR collections, as the block converts
// the zone (an account holds few instances).
func (a *APIState) convert(zone string, sets []route53.ResourceRecordSet, reserved []string) error {
	records := a.PolicyRecords(zone)
	if len(sets) == 0 && len(records) == 0 {
		return nil
	}
	var checks []route53.HealthCheck
	for _, id := range slices.Sorted(maps.Keys(a.HealthChecks)) {
		if slices.Contains(reserved, id) {
			return fmt.Errorf("health check %s has the name of a check of the Corefile", id)
		}
		checks = append(checks, a.HealthChecks[id].HealthCheck)
	}
	slices.SortFunc(sets, func(x, y route53.ResourceRecordSet) int { return CompareListing(&x, &y) })
	_, err := route53.Convert(route53.Input{Zone: zone, RecordSets: sets, HealthChecks: checks, CIDRBlocks: a.CIDRBlocks(),
		TrafficPolicies: a.TrafficPolicies(), PolicyRecords: records})
	return err
}

// affected returns the record sets of a zone the importer must convert together
// to tell whether the zone converts after a batch of records: every set at a
// name the batch changes, and every set joined to those by in-zone aliases
// either way (an alias's target must serve its type; a CNAME must stay alone
// through aliases), as the batch left them (after). held is the zone before the
// batch, which converted: the rest of it converts alone, so it is not converted
// again and a batch's cost does not grow with the zone (one pass over its sets
// compares names).
func affected(held, after map[string]StoredSet, records []RecordChange) []route53.ResourceRecordSet {
	names := map[string]bool{}
	var aliases [][2]string // owner, target
	alias := func(rs *route53.ResourceRecordSet) {
		if rs.AliasTarget != nil {
			aliases = append(aliases, [2]string{NormalizeName(rs.Name), NormalizeName(rs.AliasTarget.DNSName)})
		}
	}
	for _, ch := range records {
		names[NormalizeName(ch.RecordSet.Name)] = true
		alias(&ch.RecordSet)
	}
	for _, s := range held { // decoded only when it may be an alias
		if s.has("AliasTarget") {
			rs := s.Set()
			alias(&rs)
		}
	}
	for grown := true; grown; { // names joined by aliases, to a fixed point
		grown = false
		for _, al := range aliases {
			if names[al[0]] != names[al[1]] {
				names[al[0]], names[al[1]], grown = true, true, true
			}
		}
	}
	var sets []route53.ResourceRecordSet
	for k, s := range after {
		if names[keyName(k)] {
			sets = append(sets, s.Set())
		}
	}
	return sets
}

// CompareListing orders record sets as Route 53's listings do: by name with its
// labels reversed and the trailing dot kept ("www.example.org." ->
// "org.example.www."), then type, then set identifier.
func CompareListing(x, y *route53.ResourceRecordSet) int {
	return cmp.Or(cmp.Compare(ReversedName(NormalizeName(x.Name)), ReversedName(NormalizeName(y.Name))),
		cmp.Compare(strings.ToUpper(x.Type), strings.ToUpper(y.Type)), cmp.Compare(x.SetIdentifier, y.SetIdentifier))
}

// ReversedName returns a name with its labels reversed and the trailing dot kept
// ("www.example.org." -> "org.example.www."), the key of Route 53's listings. The
// dot counts: "a-b.example.org." ("org.example.a-b.") sorts before
// "a.example.org." ("org.example.a."), since '-' comes before '.' in ASCII.
func ReversedName(name string) string {
	labels := strings.Split(strings.TrimSuffix(name, "."), ".")
	slices.Reverse(labels)
	return strings.Join(labels, ".") + "."
}

func setIDPart(rs route53.ResourceRecordSet) string {
	if rs.SetIdentifier == "" {
		return ""
	}
	return fmt.Sprintf(", set-identifier='%s'", rs.SetIdentifier)
}

// sameRecordSet reports whether a DELETE's record set matches the one held, as
// Route 53 requires every value to.
func sameRecordSet(a, b route53.ResourceRecordSet) bool {
	a.Name, b.Name = NormalizeName(a.Name), NormalizeName(b.Name)
	a.Type, b.Type = strings.ToUpper(a.Type), strings.ToUpper(b.Type)
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

// MaxHealthChecks is how many API-managed health checks the state holds (Route
// 53's default quota per account).
const MaxHealthChecks = 200

func (a *APIState) createCheck(hc *APIHealthCheck) error {
	for _, have := range a.HealthChecks {
		if have.CallerReference == hc.CallerReference {
			return apiRefusal(CodeHealthCheckExists, "A health check with the caller reference %s already exists (%s)", hc.CallerReference, have.Id)
		}
	}
	if _, dup := a.HealthChecks[hc.Id]; dup {
		return apiRefusal(CodeHealthCheckExists, "health check %s already exists", hc.Id)
	}
	if len(a.HealthChecks) >= MaxHealthChecks {
		return apiRefusal(CodeTooManyHealthChecks, "This account holds %d health checks, the most it may", MaxHealthChecks)
	}
	c := *hc
	c.Version = 1
	a.HealthChecks[c.Id] = &c
	return nil
}

func (a *APIState) updateCheck(hc *APIHealthCheck) error {
	have := a.HealthChecks[hc.Id]
	if have == nil {
		return apiRefusal(CodeNoSuchHealthCheck, "No health check exists with the specified ID %s", hc.Id)
	}
	if hc.Version != 0 && hc.Version != have.Version {
		return apiRefusal(CodeHealthCheckVersion, "The value of HealthCheckVersion (%d) does not match the current version of health check %s (%d)", hc.Version, hc.Id, have.Version)
	}
	c := *hc
	c.CallerReference, c.Version = have.CallerReference, have.Version+1
	a.HealthChecks[c.Id] = &c
	return nil
}

func (a *APIState) deleteCheck(id string) error {
	if a.HealthChecks[id] == nil {
		return apiRefusal(CodeNoSuchHealthCheck, "No health check exists with the specified ID %s", id)
	}
	var user *route53.ResourceRecordSet // of the sets that use it, the first by zone and key: one pass, no sort
	userAt := ""
	for z, zone := range a.Zones {
		for k, s := range zone.RecordSets {
			if !s.has("HealthCheckId") {
				continue
			}
			if rs, at := s.Set(), z+"\x00"+k; rs.HealthCheckId == id && (user == nil || at < userAt) {
				user, userAt = &rs, at
			}
		}
	}
	if user != nil {
		return apiRefusal(CodeHealthCheckInUse, "The health check %s is still referenced from resource record set [name='%s', type='%s'%s]", id, user.Name, user.Type, setIDPart(*user))
	}
	for _, other := range a.HealthChecks {
		if slices.Contains(other.HealthCheckConfig.ChildHealthChecks, id) {
			return apiRefusal(CodeHealthCheckInUse, "The health check %s is a child of the calculated health check %s", id, other.Id)
		}
	}
	delete(a.HealthChecks, id)
	delete(a.Tags, "healthcheck/"+id)
	return nil
}

// MaxTags is how many tags one resource may have, as on Route 53.
const MaxTags = 10

func (a *APIState) changeTags(tc *TagChange) error {
	kind, id, _ := strings.Cut(tc.Resource, "/")
	if kind == "healthcheck" && a.HealthChecks[id] == nil {
		return apiRefusal(CodeNoSuchHealthCheck, "No health check exists with the specified ID %s", id)
	}
	t := maps.Clone(a.Tags[tc.Resource])
	if t == nil {
		t = map[string]string{}
	}
	for _, k := range tc.Remove {
		delete(t, k)
	}
	maps.Copy(t, tc.Add)
	if len(t) > MaxTags {
		return apiRefusal(CodeInvalidInput, "The resource %s would have %d tags, at most %d are allowed", tc.Resource, len(t), MaxTags)
	}
	if len(t) == 0 {
		delete(a.Tags, tc.Resource)
	} else {
		a.Tags[tc.Resource] = t
	}
	return nil
}

// Change returns the change record of id, and whether the state knows it.
func (a *APIState) Change(id string) (APIChangeInfo, bool) {
	if a == nil {
		return APIChangeInfo{}, false
	}
	for i := len(a.Changes) - 1; i >= 0; i-- {
		if a.Changes[i].ID == id {
			return a.Changes[i], true
		}
	}
	return APIChangeInfo{}, false
}

// InSync reports whether every one of members answers from gen or later.
func (a *APIState) InSync(gen uint64, members []string) bool {
	if a == nil {
		return false
	}
	for _, m := range members {
		if a.Serves[m] < gen {
			return false
		}
	}
	return true
}

// Preview returns the state a as cmd would leave it, or the refusal the state
// machine would give: the API checks a batch whole before it proposes it.
func (a *APIState) Preview(cmd *APICommand) (*APIState, error) {
	s := &State{API: a.clone()}
	if err := s.applyAPI(s.Index+1, &Command{API: cmd}); err != nil {
		return nil, err
	}
	return s.API, nil
}
