package health

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/api"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
)

// maxPromResponse bounds the query API response a probe reads.
const maxPromResponse = 1 << 20

// promChecker evaluates an instant query through the Prometheus HTTP API: the
// generalised form of Route 53's CloudWatch-alarm check. A nonzero result is an
// alarm (failure), zero passes, an empty result is ErrNoData.
type promChecker struct {
	api   promv1.API
	query string
}

func newPromChecker(spec *Spec, agent string) (Checker, error) {
	tr := &http.Transport{
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			return traceFrom(ctx).dial(ctx, network, addr) // the request's context
		},
		TLSClientConfig:        &tls.Config{InsecureSkipVerify: true},
		DisableKeepAlives:      true, // no idle sockets or goroutines between probes
		MaxResponseHeaderBytes: maxHeaderBytes,
	}
	c, err := api.NewClient(api.Config{Address: spec.Target, RoundTripper: limitRT{tr, agent}})
	if err != nil {
		return nil, err
	}
	return &promChecker{api: promv1.NewAPI(c), query: spec.Query}, nil
}

// Check runs the query at the current time.
func (p *promChecker) Check(ctx context.Context) error {
	var opts []promv1.Option
	if dl, ok := ctx.Deadline(); ok {
		// Prometheus abandons the evaluation when the probe would, not later.
		opts = append(opts, promv1.WithTimeout(time.Until(dl).Round(time.Millisecond)))
	}
	v, _, err := p.api.Query(ctx, p.query, time.Now(), opts...)
	if err != nil {
		return fmt.Errorf("query: %w", err)
	}
	var vals []model.SampleValue
	switch v := v.(type) {
	case model.Vector:
		for _, s := range v {
			vals = append(vals, s.Value)
		}
	case *model.Scalar:
		vals = append(vals, v.Value)
	default:
		return fmt.Errorf("query returned a %s, expected an instant vector or a scalar", v.Type())
	}
	data := false
	for _, x := range vals {
		f := float64(x)
		if math.IsNaN(f) {
			continue // a NaN is no data point, like a missing one
		}
		data = true
		if f != 0 {
			return fmt.Errorf("alarm: query returned %v", f)
		}
	}
	if !data {
		return ErrNoData
	}
	return nil
}

// limitRT sets the User-Agent and caps response bodies at maxPromResponse.
type limitRT struct {
	next  http.RoundTripper
	agent string
}

func (l limitRT) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("User-Agent", l.agent)
	resp, err := l.next.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	resp.Body = &cappedBody{r: io.LimitReader(resp.Body, maxPromResponse+1), c: resp.Body}
	return resp, nil
}

// errTooLarge fails a read past a response cap.
var errTooLarge = errors.New("response larger than the limit")

type cappedBody struct {
	r io.Reader
	c io.Closer
	n int64
}

func (b *cappedBody) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if b.n += int64(n); b.n > maxPromResponse {
		return 0, errTooLarge
	}
	return n, err
}

func (b *cappedBody) Close() error { return b.c.Close() }
