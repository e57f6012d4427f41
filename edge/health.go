package edge

import (
	"context"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"github.com/puzpuzpuz/xsync/v3"
	"github.com/valyala/fasthttp"

	"gw/adapters"
	"gw/adapters/upstream"
	"gw/admin"
	"gw/admin/resources"
	"gw/admin/snapshot"
	"gw/sse/rawjson"
)

// Health runs the background_model_check probes of direct models and keeps
// their results, keyed by derived ID so that results survive reloads. A
// model with a check is excluded from routing while its last probe failed
// or its last success is older than stale_after_seconds; before its first
// probe completes it counts as healthy.
type Health struct {
	Log *slog.Logger

	states *xsync.MapOf[string, *ModelHealth]

	mu     sync.Mutex
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// ModelHealth is one model's probe state. Fields are atomics: probes write,
// requests read.
type ModelHealth struct {
	Model        string
	staleAfter   atomic.Int64 // ns
	checked      atomic.Bool  // at least one probe completed
	ok           atomic.Bool  // last probe succeeded
	lastCheckNs  atomic.Int64
	lastOKNs     atomic.Int64
	lastStatus   atomic.Int32
	lastErr      atomic.Pointer[string]
	gaugeCreated atomic.Bool
}

// NewHealth returns an idle checker; Apply starts probes for a snapshot.
func NewHealth(log *slog.Logger) *Health {
	if log == nil {
		log = slog.Default()
	}
	return &Health{Log: log, states: xsync.NewMapOf[string, *ModelHealth]()}
}

// Healthy reports whether the direct model with derived ID id may be routed to.
func (h *Health) Healthy(id string, now time.Time) bool {
	if h == nil {
		return true
	}
	st, ok := h.states.Load(id)
	if !ok || !st.checked.Load() {
		return true
	}
	if !st.ok.Load() {
		return false
	}
	return now.UnixNano()-st.lastOKNs.Load() <= st.staleAfter.Load()
}

// Apply stops the probes of the previous snapshot and starts those of snap.
func (h *Health) Apply(snap *snapshot.Snapshot) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.cancel != nil {
		h.cancel()
		h.wg.Wait()
	}
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel = cancel
	for _, p := range snap.PlanList {
		bc := p.Model.BackgroundCheck
		if p.Kind != resources.KindDirect || bc == nil || !bc.Enabled || p.Upstream == nil || p.Upstream.Err != nil {
			continue
		}
		st, _ := h.states.LoadOrCompute(p.ID, func() *ModelHealth { return &ModelHealth{Model: p.Alias} })
		st.staleAfter.Store(int64(time.Duration(bc.StaleAfterSecond) * time.Second))
		if st.gaugeCreated.CompareAndSwap(false, true) {
			metrics.NewGauge(`gw_model_healthy{model="`+admin.EscapeLabelValue(p.Alias)+`"}`, func() float64 {
				if h.Healthy(p.ID, time.Now()) {
					return 1
				}
				return 0
			})
		}
		h.wg.Add(1)
		go h.loop(ctx, p, st)
	}
}

// Close stops every probe.
func (h *Health) Close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.cancel != nil {
		h.cancel()
		h.wg.Wait()
		h.cancel = nil
	}
}

func (h *Health) loop(ctx context.Context, p *snapshot.Plan, st *ModelHealth) {
	defer h.wg.Done()
	bc := p.Model.BackgroundCheck
	interval := time.Duration(bc.IntervalSeconds) * time.Second
	t := time.NewTimer(0) // first probe at once
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		h.probe(p, st)
		t.Reset(interval)
	}
}

// probe sends one small chat request with the check's prompt and max_tokens.
func (h *Health) probe(p *snapshot.Plan, st *ModelHealth) {
	bc := p.Model.BackgroundCheck
	body := append([]byte(`{"model":`), p.UpstreamModelJSON...)
	body = append(body, `,"messages":[{"role":"user","content":`...)
	body = rawjson.AppendQuote(body, bc.Prompt)
	body = append(body, `}],"max_tokens":`...)
	body = strconv.AppendInt(body, bc.MaxTokens, 10)
	body = append(body, '}')
	in := adapters.ChatInput{Body: body, UpstreamModel: p.UpstreamModel, Provider: p.Model.Provider}
	req := fasthttp.AcquireRequest()
	resp := fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	now := time.Now()
	st.lastCheckNs.Store(now.UnixNano())
	var status int
	var errText string
	if err := p.Upstream.Adapter.BuildChat(req, &in); err != nil {
		errText = "cannot build the probe request"
	} else if err := p.Upstream.Client.Do(req, resp, time.Duration(bc.TimeoutSeconds)*time.Second); err != nil {
		errText = upstream.Describe(err)
	} else {
		status = resp.StatusCode()
	}
	ok := errText == "" && (status < 300 || ignored(bc.IgnoreStatuses, status))
	if ok {
		st.lastOKNs.Store(time.Now().UnixNano())
	} else if errText == "" {
		errText = "upstream returned " + strconv.Itoa(status)
	}
	was := st.ok.Load() || !st.checked.Load()
	st.lastStatus.Store(int32(status))
	st.lastErr.Store(&errText)
	st.ok.Store(ok)
	st.checked.Store(true)
	if was != ok {
		if ok {
			h.Log.Info("model healthy again", "model", p.Alias)
		} else {
			h.Log.Warn("model unhealthy; excluded from routing", "model", p.Alias, "error", errText)
		}
	}
}

func ignored(list []int64, status int) bool {
	for _, s := range list {
		if int(s) == status {
			return true
		}
	}
	return false
}

// ModelStatus is one row of GET /status/models.
type ModelStatus struct {
	Model         string     `json:"model"`
	Healthy       bool       `json:"healthy"`
	Checked       bool       `json:"checked"`
	LastCheckAt   *time.Time `json:"last_check_at,omitempty"`
	LastOKAt      *time.Time `json:"last_ok_at,omitempty"`
	LastStatus    int        `json:"last_status,omitempty"`
	LastError     string     `json:"last_error,omitempty"`
	CoolingDown   bool       `json:"cooling_down"`
	CooldownUntil *time.Time `json:"cooldown_until,omitempty"`
}

// Statuses lists every direct model of snap with its health and cooldown.
func (h *Health) Statuses(snap *snapshot.Snapshot) []ModelStatus {
	now := time.Now()
	out := []ModelStatus{}
	for _, p := range snap.PlanList {
		if p.Kind != resources.KindDirect {
			continue
		}
		ms := ModelStatus{Model: p.Alias, Healthy: h.Healthy(p.ID, now)}
		if h != nil {
			if st, ok := h.states.Load(p.ID); ok && st.checked.Load() {
				ms.Checked = true
				t := time.Unix(0, st.lastCheckNs.Load()).UTC()
				ms.LastCheckAt = &t
				if ok := st.lastOKNs.Load(); ok > 0 {
					t2 := time.Unix(0, ok).UTC()
					ms.LastOKAt = &t2
				}
				ms.LastStatus = int(st.lastStatus.Load())
				if e := st.lastErr.Load(); e != nil {
					ms.LastError = *e
				}
			}
		}
		if p.State != nil && p.State.CoolingDown(now) {
			ms.CoolingDown = true
			u := now.Add(p.State.CooldownLeft(now)).UTC()
			ms.CooldownUntil = &u
		}
		out = append(out, ms)
	}
	return out
}
