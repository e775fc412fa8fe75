package healthroute

import "net/http"

// statusPage serves GET /: the status page (HTML).
func (s *apiServer) statusPage(w http.ResponseWriter, r *http.Request) {
	http.Error(w, "the status page is being built; see /v1/checks and /v1/records", http.StatusNotImplemented)
}
