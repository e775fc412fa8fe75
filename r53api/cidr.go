package r53api

import (
	"cmp"
	"crypto/rand"
	"encoding/hex"
	"encoding/xml"
	"fmt"
	"maps"
	"net/http"
	"net/netip"
	"regexp"
	"slices"

	"github.com/healthroute/healthroute/control"
)

type cidrCollectionXML struct {
	Arn     string
	Id      string
	Name    string
	Version int64
}

type createCidrCollectionRequest struct {
	XMLName         xml.Name `xml:"CreateCidrCollectionRequest"`
	Name            string
	CallerReference string
}

type createCidrCollectionResponse struct {
	XMLName    xml.Name `xml:"CreateCidrCollectionResponse"`
	Xmlns      string   `xml:"xmlns,attr"`
	Collection cidrCollectionXML
}

type listCidrCollectionsResponse struct {
	XMLName         xml.Name            `xml:"ListCidrCollectionsResponse"`
	Xmlns           string              `xml:"xmlns,attr"`
	CidrCollections []cidrCollectionXML `xml:"CidrCollections>member"`
}

type changeCidrCollectionRequest struct {
	XMLName           xml.Name `xml:"ChangeCidrCollectionRequest"`
	CollectionVersion *int64
	Changes           []struct {
		LocationName string
		Action       string
		CidrList     []string `xml:"CidrList>Cidr"`
	} `xml:"Changes>member"`
}

type changeCidrCollectionResponse struct {
	XMLName xml.Name `xml:"ChangeCidrCollectionResponse"`
	Xmlns   string   `xml:"xmlns,attr"`
	Id      string
}

type cidrBlockXML struct {
	CidrBlock    string
	LocationName string
}

type listCidrBlocksResponse struct {
	XMLName    xml.Name       `xml:"ListCidrBlocksResponse"`
	Xmlns      string         `xml:"xmlns,attr"`
	CidrBlocks []cidrBlockXML `xml:"CidrBlocks>member"`
}

type listCidrLocationsResponse struct {
	XMLName       xml.Name `xml:"ListCidrLocationsResponse"`
	Xmlns         string   `xml:"xmlns,attr"`
	CidrLocations []struct {
		LocationName string
	} `xml:"CidrLocations>member"`
}

type deleteCidrCollectionResponse struct {
	XMLName xml.Name `xml:"DeleteCidrCollectionResponse"`
	Xmlns   string   `xml:"xmlns,attr"`
}

// cidrName is what Route 53 accepts as a collection's or a location's name.
var cidrName = regexp.MustCompile(`^[0-9A-Za-z_\-]+$`)

func collectionXML(c *control.APICidrCollection) cidrCollectionXML {
	return cidrCollectionXML{Arn: "arn:aws:route53:::cidrcollection/" + c.Id, Id: c.Id, Name: c.Name, Version: c.Version}
}

func errNoCollection(id string) *apiError {
	return newErr(http.StatusNotFound, control.CodeNoSuchCidrCollection, "No CIDR collection exists with the ID "+id)
}

// newCollectionID returns a fresh collection ID, a UUID as Route 53's.
func newCollectionID() string {
	var b [16]byte
	rand.Read(b[:])
	b[6], b[8] = b[6]&0x0f|0x40, b[8]&0x3f|0x80
	h := hex.EncodeToString(b[:])
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

func (s *Server) createCidrCollection(w http.ResponseWriter, r *http.Request) {
	var req createCidrCollectionRequest
	if !decoded(w, r, &req) {
		return
	}
	if len(req.Name) > 64 || !cidrName.MatchString(req.Name) || req.CallerReference == "" || len(req.CallerReference) > 64 {
		errInput("A CIDR collection needs a Name of 1 to 64 letters, digits, _ and -, and a CallerReference of 1 to 64 characters").write(w)
		return
	}
	c := &control.APICidrCollection{Id: newCollectionID(), Name: req.Name, CallerReference: req.CallerReference}
	if !s.proposed(w, r, &control.APICommand{APIResourceCommand: control.APIResourceCommand{CreateCidr: c}}, "") {
		return
	}
	c.Version = 1
	w.Header().Set("Location", "/2013-04-01/cidrcollection/"+c.Id)
	writeXML(w, http.StatusCreated, createCidrCollectionResponse{Xmlns: Namespace, Collection: collectionXML(c)})
}

func (s *Server) listCidrCollections(w http.ResponseWriter, r *http.Request) {
	st := s.state()
	resp := listCidrCollectionsResponse{Xmlns: Namespace, CidrCollections: []cidrCollectionXML{}}
	cs := slices.Collect(maps.Values(st.Cidrs))
	slices.SortFunc(cs, func(a, b *control.APICidrCollection) int { return cmp.Compare(a.Name, b.Name) })
	for _, c := range cs {
		resp.CidrCollections = append(resp.CidrCollections, collectionXML(c))
	}
	writeXML(w, http.StatusOK, resp)
}

// changeCidrCollection puts blocks into locations or deletes them, as one
// change; the record sets naming the collection answer from it once INSYNC.
func (s *Server) changeCidrCollection(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	var req changeCidrCollectionRequest
	if !decoded(w, r, &req) {
		return
	}
	if len(req.Changes) == 0 || len(req.Changes) > control.MaxCidrBlocks {
		errInput(fmt.Sprintf("A ChangeCidrCollection holds 1 to %d changes", control.MaxCidrBlocks)).write(w)
		return
	}
	ch := &control.CidrChange{Id: id}
	if req.CollectionVersion != nil {
		ch.Version = *req.CollectionVersion
	}
	for i, c := range req.Changes {
		if c.LocationName == "*" || len(c.LocationName) > 16 || !cidrName.MatchString(c.LocationName) {
			errInput(fmt.Sprintf("Change %d: LocationName '%s', expected 1 to 16 letters, digits, _ and - (not *)", i+1, c.LocationName)).write(w)
			return
		}
		if c.Action != "PUT" && c.Action != "DELETE_IF_EXISTS" {
			errInput(fmt.Sprintf("Change %d: Action '%s', expected PUT or DELETE_IF_EXISTS", i+1, c.Action)).write(w)
			return
		}
		if len(c.CidrList) == 0 {
			errInput(fmt.Sprintf("Change %d: an empty CidrList", i+1)).write(w)
			return
		}
		lc := control.CidrLocationChange{Location: c.LocationName, Action: c.Action}
		for _, b := range c.CidrList {
			p, err := netip.ParsePrefix(b)
			if err != nil || p != p.Masked() || p.Bits() < 1 || p.Addr().Is4() && p.Bits() > 24 || p.Addr().Is6() && p.Bits() > 48 {
				errInput(fmt.Sprintf("Change %d: '%s' is not a CIDR block Route 53 takes: an address with its host bits zero and a prefix length, IPv4 /1 to /24, IPv6 /1 to /48", i+1, b)).write(w)
				return
			}
			lc.Blocks = append(lc.Blocks, p.String())
		}
		ch.Changes = append(ch.Changes, lc)
	}
	if s.state().Cidrs[id] == nil {
		errNoCollection(id).write(w)
		return
	}
	cmd := &control.APICommand{ChangeID: newChangeID(), APIResourceCommand: control.APIResourceCommand{ChangeCidr: ch}}
	if !s.proposed(w, r, cmd, "") {
		return
	}
	writeXML(w, http.StatusOK, changeCidrCollectionResponse{Xmlns: Namespace, Id: cmd.ChangeID})
}

func (s *Server) listCidrBlocks(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	c := s.state().Cidrs[id]
	if c == nil {
		errNoCollection(id).write(w)
		return
	}
	loc := r.URL.Query().Get("location")
	if _, ok := c.Locations[loc]; loc != "" && !ok {
		newErr(http.StatusNotFound, control.CodeNoSuchCidrLocation, fmt.Sprintf("The CIDR collection %s has no location %s", id, loc)).write(w)
		return
	}
	resp := listCidrBlocksResponse{Xmlns: Namespace, CidrBlocks: []cidrBlockXML{}}
	for _, l := range slices.Sorted(maps.Keys(c.Locations)) {
		if loc != "" && l != loc {
			continue
		}
		for _, b := range c.Locations[l] {
			resp.CidrBlocks = append(resp.CidrBlocks, cidrBlockXML{CidrBlock: b, LocationName: l})
		}
	}
	writeXML(w, http.StatusOK, resp)
}

func (s *Server) listCidrLocations(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	c := s.state().Cidrs[id]
	if c == nil {
		errNoCollection(id).write(w)
		return
	}
	resp := listCidrLocationsResponse{Xmlns: Namespace}
	resp.CidrLocations = make([]struct{ LocationName string }, 0, len(c.Locations))
	for _, l := range slices.Sorted(maps.Keys(c.Locations)) {
		resp.CidrLocations = append(resp.CidrLocations, struct{ LocationName string }{l})
	}
	writeXML(w, http.StatusOK, resp)
}

func (s *Server) deleteCidrCollection(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if !s.proposed(w, r, &control.APICommand{APIResourceCommand: control.APIResourceCommand{DeleteCidr: id}}, control.CodeNoSuchCidrCollection) {
		return
	}
	writeXML(w, http.StatusOK, deleteCidrCollectionResponse{Xmlns: Namespace})
}
