package health

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/healthroute/healthroute/internal/coretest"
)

func TestPrometheus(t *testing.T) {
	const vector = `{"status":"success","data":{"resultType":"vector","result":[%s]}}`
	sample := func(v string) string {
		return `{"metric":{"job":"canary"},"value":[1700000000.0,"` + v + `"]}`
	}
	tests := []struct {
		name string
		body string
		code int
		want string
	}{
		{"zero: ok", fmt.Sprintf(vector, sample("0")), 200, ""},
		{"one: alarm", fmt.Sprintf(vector, sample("1")), 200, "alarm"},
		{"nonzero: alarm", fmt.Sprintf(vector, sample("0.5")), 200, "alarm"},
		{"one series of two alarms", fmt.Sprintf(vector, sample("0")+","+sample("1")), 200, "alarm"},
		{"empty: no data", fmt.Sprintf(vector, ""), 200, ErrNoData.Error()},
		{"NaN: no data", fmt.Sprintf(vector, sample("NaN")), 200, ErrNoData.Error()},
		{"scalar zero", `{"status":"success","data":{"resultType":"scalar","result":[1700000000,"0"]}}`, 200, ""},
		{"scalar one", `{"status":"success","data":{"resultType":"scalar","result":[1700000000,"1"]}}`, 200, "alarm"},
		{"range vector", `{"status":"success","data":{"resultType":"matrix","result":[]}}`, 200, "expected an instant vector"},
		{"bad query", `{"status":"error","errorType":"bad_data","error":"parse error"}`, 400, "parse error"},
		{"server error", `oops`, 500, "query"},
		{"huge response", fmt.Sprintf(vector, strings.Repeat(sample("0")+",", 40000)+sample("0")), 200, "larger than the limit"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			type req struct{ path, query, agent string }
			got := make(chan req, 1)
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				r.ParseForm()
				select {
				case got <- req{r.URL.Path, r.Form.Get("query"), r.UserAgent()}:
				default:
				}
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(tc.code)
				w.Write([]byte(tc.body))
			}))
			defer srv.Close()
			q := "canary_consecutive_failures >= bool 2"
			err, _ := probeOnce(t, &Spec{Name: "t", Type: Prometheus, Target: srv.URL, Query: q})
			wantResult(t, err, tc.want)
			if r := <-got; r != (req{"/api/v1/query", q, testAgent}) {
				t.Errorf("server saw %+v", r)
			}
		})
	}
	t.Run("hangs", func(t *testing.T) {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			r.ParseForm() // the server notices the client leave only once the body is read
			<-r.Context().Done()
		}))
		defer srv.Close()
		err, took := probeOnce(t, &Spec{Name: "t", Type: Prometheus, Target: srv.URL, Query: "up", Timeout: 300 * time.Millisecond})
		wantResult(t, err, "deadline")
		if took > time.Second {
			t.Errorf("probe took %s; want its 300ms budget", took)
		}
	})
	t.Run("closed port", func(t *testing.T) {
		err, _ := probeOnce(t, &Spec{Name: "t", Type: Prometheus, Target: "http://" + coretest.ClosedPort(t), Query: "up"})
		wantResult(t, err, "refused")
	})
}
