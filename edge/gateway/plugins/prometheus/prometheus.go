// Package prometheus is the prometheus plugin: requests of the routes (or
// global rules) that enable it are counted on gw's /metrics as
// <prefix>http_status{code,route,service,consumer,node} (counter),
// <prefix>http_latency{type="request",route,service,consumer,node}
// (histogram, milliseconds) and <prefix>bandwidth{type="ingress"|"egress",
// route,service,consumer,node} (bytes), through VictoriaMetrics/metrics
// like the rest of gw. Plugin metadata sets `prefix` (default "gw_") and
// `disabled_labels` per metric (http_status, http_latency, bandwidth); the
// structural label `type` cannot be disabled.
package prometheus

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"github.com/puzpuzpuz/xsync/v3"

	"gw/edge/gateway/plugin"
)

// Name and Priority are APISIX's.
const (
	Name     = "prometheus"
	Priority = 500
)

func init() {
	plugin.Register(&plugin.Def{Name: Name, Priority: Priority, New: New})
}

// labels of each metric, in output order; "type" is structural.
var metricLabels = map[string][]string{
	"http_status":  {"code", "route", "service", "consumer", "node"},
	"http_latency": {"type", "route", "service", "consumer", "node"},
	"bandwidth":    {"type", "route", "service", "consumer", "node"},
}

type key struct {
	route, service, consumer, node string
	code                           int
}

type series struct {
	status  *metrics.Counter
	latency *metrics.Histogram
	in, out *metrics.Counter
}

// set is one prefix + disabled_labels combination's series, shared by
// every route (and kept across snapshots).
type set struct {
	prefix   string
	disabled map[string]map[string]bool
	series   *xsync.MapOf[key, *series]
}

type prom struct {
	plugin.Base
	preferName bool
	set        *set
}

// New compiles a prometheus configuration with the current metadata.
func New(raw json.RawMessage, env *plugin.Env, owner string) (plugin.Plugin, error) {
	var c struct {
		PreferName bool `json:"prefer_name"`
	}
	if err := json.Unmarshal(raw, &c); err != nil {
		return nil, fmt.Errorf("cannot decode: %w", err)
	}
	md := struct {
		Prefix   string              `json:"prefix"`
		Disabled map[string][]string `json:"disabled_labels"`
	}{Prefix: "gw_"}
	if m := env.Metadata(Name); len(m) > 0 {
		if err := json.Unmarshal(m, &md); err != nil {
			return nil, fmt.Errorf("cannot decode plugin metadata: %w", err)
		}
	}
	if err := CheckDisabled(md.Disabled); err != nil {
		return nil, err
	}
	if !validPrefix(md.Prefix) {
		return nil, fmt.Errorf("metadata prefix %q is not a metric name prefix", md.Prefix)
	}
	id := md.Prefix
	dis := map[string]map[string]bool{}
	for _, m := range []string{"http_status", "http_latency", "bandwidth"} {
		for _, l := range md.Disabled[m] {
			if dis[m] == nil {
				dis[m] = map[string]bool{}
			}
			dis[m][l] = true
			id += "/" + m + ":" + l
		}
	}
	s, _ := env.Shared.GetOrCreate("prometheus/"+id, func() (any, error) {
		return &set{prefix: md.Prefix, disabled: dis, series: xsync.NewMapOf[key, *series]()}, nil
	})
	return &prom{preferName: c.PreferName, set: s.(*set)}, nil
}

// CheckDisabled refuses unknown metrics, unknown labels and the
// structural `type` label in disabled_labels.
func CheckDisabled(d map[string][]string) error {
	for m, ls := range d {
		known, ok := metricLabels[m]
		if !ok {
			return fmt.Errorf("disabled_labels: unknown metric %q", m)
		}
		for _, l := range ls {
			if l == "type" {
				return fmt.Errorf("disabled_labels: %s label `type` is structural and cannot be disabled", m)
			}
			found := false
			for _, k := range known {
				found = found || k == l
			}
			if !found {
				return fmt.Errorf("disabled_labels: %s has no label %q", m, l)
			}
		}
	}
	return nil
}

func validPrefix(p string) bool {
	for i, r := range p {
		if !(r == '_' || r == ':' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || i > 0 && r >= '0' && r <= '9') {
			return false
		}
	}
	return p != ""
}

func (p *prom) Phases() plugin.Phase { return plugin.Log }

func (p *prom) Log(c *plugin.Ctx) {
	k := key{route: c.Vars.RouteID, service: c.Vars.ServiceID, consumer: c.Vars.ConsumerName, node: c.Upstream, code: c.R.Response.StatusCode()}
	if p.preferName && c.Vars.RouteName != "" {
		k.route = c.Vars.RouteName
	}
	s, ok := p.set.series.Load(k)
	if !ok {
		s, _ = p.set.series.LoadOrCompute(k, func() *series { return p.set.newSeries(k) })
	}
	s.status.Inc()
	s.latency.Update(float64(time.Since(c.Start).Microseconds()) / 1000)
	req := &c.R.Request
	s.in.Add(len(req.Header.Header()) + len(req.Body()))
	resp := &c.R.Response
	s.out.Add(len(resp.Header.Header()) + len(resp.Body()))
}

// newSeries registers one label set's metrics (once per combination).
func (st *set) newSeries(k key) *series {
	vals := map[string]string{"code": strconv.Itoa(k.code), "route": k.route, "service": k.service, "consumer": k.consumer, "node": k.node}
	name := func(metric, typ string) string {
		var sb strings.Builder
		sb.WriteString(st.prefix + metric + "{")
		first := true
		for _, l := range metricLabels[metric] {
			if st.disabled[metric][l] {
				continue
			}
			v := vals[l]
			if l == "type" {
				v = typ
			}
			if !first {
				sb.WriteByte(',')
			}
			first = false
			sb.WriteString(l + "=" + strconv.Quote(v))
		}
		sb.WriteByte('}')
		return sb.String()
	}
	return &series{
		status:  metrics.GetOrCreateCounter(name("http_status", "")),
		latency: metrics.GetOrCreateHistogram(name("http_latency", "request")),
		in:      metrics.GetOrCreateCounter(name("bandwidth", "ingress")),
		out:     metrics.GetOrCreateCounter(name("bandwidth", "egress")),
	}
}
