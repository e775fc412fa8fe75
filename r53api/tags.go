package r53api

import (
	"encoding/xml"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"

	"github.com/healthroute/healthroute/control"
)

// resource returns the tag resource key of a request's {type} and {id}.
func (s *Server) resource(typ, id string) (string, *apiError) {
	switch typ {
	case "healthcheck":
		if s.state().HealthChecks[id] == nil {
			return "", errNoCheck(id)
		}
	case "hostedzone":
		id = strings.TrimPrefix(id, "/hostedzone/")
		if !slices.ContainsFunc(s.allZones(), func(z Zone) bool { return z.ID() == id }) {
			return "", errNoZone(id)
		}
	default:
		return "", errInput(fmt.Sprintf("ResourceType '%s', expected healthcheck or hostedzone", typ))
	}
	return typ + "/" + id, nil
}

func (s *Server) changeTags(w http.ResponseWriter, r *http.Request) {
	res, e := s.resource(r.PathValue("type"), r.PathValue("id"))
	if e != nil {
		e.write(w)
		return
	}
	var req changeTagsForResourceRequest
	if err := xml.NewDecoder(r.Body).Decode(&req); err != nil {
		errInput("Invalid XML ; " + err.Error()).write(w)
		return
	}
	if e := tagFields(&req); e != nil {
		e.write(w)
		return
	}
	tc := &control.TagChange{Resource: res, Remove: req.RemoveTagKeys}
	for _, t := range req.AddTags {
		if tc.Add == nil {
			tc.Add = map[string]string{}
		}
		tc.Add[t.Key] = t.Value
	}
	if e := s.propose(r.Context(), &control.APICommand{Tags: tc}); e != nil {
		e.write(w)
		return
	}
	writeXML(w, http.StatusOK, changeTagsForResourceResponse{Xmlns: Namespace})
}

func (s *Server) tagSet(typ, id, res string) resourceTagSet {
	ts := resourceTagSet{ResourceType: typ, ResourceId: id, Tags: []tag{}}
	t := s.state().Tags[res]
	for _, k := range slices.Sorted(maps.Keys(t)) {
		ts.Tags = append(ts.Tags, tag{Key: k, Value: t[k]})
	}
	return ts
}

func (s *Server) listTags(w http.ResponseWriter, r *http.Request) {
	typ, id := r.PathValue("type"), r.PathValue("id")
	res, e := s.resource(typ, id)
	if e != nil {
		e.write(w)
		return
	}
	writeXML(w, http.StatusOK, listTagsForResourceResponse{Xmlns: Namespace, ResourceTagSet: s.tagSet(typ, strings.TrimPrefix(res, typ+"/"), res)})
}

func (s *Server) listTagsForResources(w http.ResponseWriter, r *http.Request) {
	typ := r.PathValue("type")
	var req listTagsForResourcesRequest
	if err := xml.NewDecoder(r.Body).Decode(&req); err != nil {
		errInput("Invalid XML ; " + err.Error()).write(w)
		return
	}
	if len(req.ResourceIds) > 10 {
		errInput("ListTagsForResources takes at most 10 resource IDs").write(w)
		return
	}
	resp := listTagsForResourcesResponse{Xmlns: Namespace, ResourceTagSets: []resourceTagSet{}}
	for _, id := range req.ResourceIds {
		res, e := s.resource(typ, id)
		if e != nil {
			e.write(w)
			return
		}
		resp.ResourceTagSets = append(resp.ResourceTagSets, s.tagSet(typ, strings.TrimPrefix(res, typ+"/"), res))
	}
	writeXML(w, http.StatusOK, resp)
}
