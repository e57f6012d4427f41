package edge

import (
	"encoding/json"
	"time"

	"gw/admin"
	"gw/admin/resources"
	"gw/admin/snapshot"
	"gw/edge/statusui"
	"gw/edge/usage"
	"gw/limiter"
)

// StatusPage is the live status page (/ui) of the status listener: the
// collector fed by the usage pipeline and the state it renders from the
// same sources as /status/*.
type StatusPage struct {
	*statusui.UI
	collector *statusui.Collector
	ops       *Ops
	version   string
}

// NewStatusPage wires the page to o's sources and subscribes its
// collector to o.Usage (nil: the traffic panels stay empty).
func NewStatusPage(o *Ops, version string) *StatusPage {
	p := &StatusPage{collector: statusui.NewCollector(), ops: o, version: version}
	p.UI = statusui.New(p.render)
	if o.Usage != nil {
		o.Usage.Observe(p.collector.Observe)
	}
	return p
}

// Close stops the event streams and the collector's subscription.
func (p *StatusPage) Close() {
	if p.ops.Usage != nil {
		p.ops.Usage.Observe(nil)
	}
	p.UI.Close()
}

type pageState struct {
	Now          time.Time               `json:"now"`
	Version      string                  `json:"version"`
	Config       *admin.Status           `json:"config"`
	Models       []ModelStatus           `json:"models"`
	Groups       []pageGroup             `json:"groups"`
	Limiter      string                  `json:"limiter"`
	Exporters    []usage.SinkStatus      `json:"exporters"`
	Traffic      statusui.Traffic        `json:"traffic"`
	RecentErrors []statusui.ErrorEntry   `json:"recent_errors"`
	Aliases      map[string]pageAliasUse `json:"aliases"`
}

type pageGroup struct {
	Alias    string       `json:"alias"`
	Strategy string       `json:"strategy"`
	Targets  []pageTarget `json:"targets"`
}

type pageTarget struct {
	Model       string  `json:"model"`
	Weight      int     `json:"weight"`
	Priority    int     `json:"priority"`
	Healthy     bool    `json:"healthy"`
	CoolingDown bool    `json:"cooling_down"`
	InFlight    int64   `json:"in_flight"`
	LatencyMS   float64 `json:"latency_ms"`
	statusui.PairCount
}

// pageAliasUse is one alias's traffic over the last minute, whatever its kind.
type pageAliasUse = statusui.PairCount

func (p *StatusPage) render() ([]byte, error) {
	now := time.Now()
	o := p.ops
	st := pageState{Now: now.UTC(), Version: p.version, Config: o.Manager.Status(), Models: []ModelStatus{}, Groups: []pageGroup{},
		Limiter: "local", Exporters: []usage.SinkStatus{}, Aliases: map[string]pageAliasUse{}}
	if o.Limiter != nil {
		st.Limiter = limiterState(o.Limiter.State())
	}
	if o.Usage != nil {
		st.Exporters = o.Usage.Status()
	}
	traffic, pairs, errs := p.collector.Snapshot(now)
	st.Traffic, st.RecentErrors = traffic, errs
	for k, c := range pairs {
		a := st.Aliases[k[0]]
		a.Requests += c.Requests
		a.Errors += c.Errors
		st.Aliases[k[0]] = a
	}
	if snap := o.Manager.Holder().Load(); snap != nil {
		st.Models = o.Health.Statuses(snap)
		st.Groups = groups(snap, o.Health, pairs, now)
	}
	return json.Marshal(&st)
}

// groups lists every routing alias with its targets' live state.
func groups(snap *snapshot.Snapshot, h *Health, pairs map[[2]string]statusui.PairCount, now time.Time) []pageGroup {
	out := []pageGroup{}
	for _, pl := range snap.PlanList {
		if pl.Kind != resources.KindRouting || pl.Model.Routing == nil {
			continue
		}
		g := pageGroup{Alias: pl.Alias, Strategy: pl.Model.Routing.Strategy, Targets: make([]pageTarget, 0, len(pl.Targets))}
		for _, t := range pl.Targets {
			pt := pageTarget{Model: t.Plan.Alias, Weight: t.Weight, Priority: t.Priority, Healthy: h.Healthy(t.Plan.ID, now),
				PairCount: pairs[[2]string{pl.Alias, t.Plan.Alias}]}
			if s := t.Plan.State; s != nil {
				pt.InFlight = s.InFlight()
				pt.LatencyMS = float64(s.Latency()) / float64(time.Millisecond)
				pt.CoolingDown = s.CoolingDown(now)
			}
			g.Targets = append(g.Targets, pt)
		}
		out = append(out, g)
	}
	return out
}

func limiterState(s limiter.State) string {
	switch s {
	case limiter.StateConnected:
		return "connected"
	case limiter.StateDegraded:
		return "degraded"
	case limiter.StateCircuitOpen:
		return "circuit_open"
	}
	return "local"
}
