// Package admin owns the configuration lifecycle: it runs the resource-file
// load pipeline (package resources), compiles the result (package snapshot),
// publishes it, and reports the state shown at GET /status/config.
package admin

import (
	"log/slog"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/VictoriaMetrics/metrics"

	"gw/admin/resources"
	"gw/admin/snapshot"
)

var (
	applyDuration = metrics.NewPrometheusHistogram(`gw_config_apply_duration_seconds{trigger="full"}`)
	// applyBatch is the number of entries one apply handled.
	applyBatch = metrics.NewPrometheusHistogramExt(`gw_config_apply_batch_events{trigger="full"}`,
		[]float64{1, 10, 100, 1000, 10000, 100000})
)

// Config states.
const (
	StateNoSnapshot = "no_snapshot"
	StateSynced     = "synced"
	StateDegraded   = "degraded"
)

// Status is the body of GET /status/config.
type Status struct {
	State         string                  `json:"state"`
	ApplySeq      uint64                  `json:"apply_seq"`
	AppliedAt     *time.Time              `json:"applied_at"`
	ResourcesFile string                  `json:"resources_file"`
	LastAttemptAt *time.Time              `json:"last_attempt_at"`
	LastTrigger   string                  `json:"last_trigger,omitempty"`
	Rejected      []Rejected              `json:"rejected"`
	UnknownKinds  []resources.UnknownKind `json:"unknown_kinds"`
	Warnings      []string                `json:"warnings"`
	Counts        map[string]int          `json:"counts"`
	// Unenforced lists configured entries and fields without runtime
	// effect in this build: the resource file's and the startup settings'.
	Unenforced []snapshot.Unenforced `json:"unenforced"`
	// JWKS is the signing-key state of the JWKS oidc_providers (filled by
	// Manager.KeySets when set): a key endpoint that is down shows here.
	JWKS []KeySetState `json:"jwks,omitempty"`
}

// KeySetState is one JWKS provider's signing keys (edge/authn/jwks).
type KeySetState struct {
	Provider      string     `json:"provider"`
	URL           string     `json:"url"`
	State         string     `json:"state"`
	Keys          int        `json:"keys"`
	LastRefreshAt *time.Time `json:"last_refresh_at,omitempty"`
	LastSuccessAt *time.Time `json:"last_success_at,omitempty"`
	LastError     string     `json:"last_error,omitempty"`
}

// Rejected is one load error of the last failed apply.
type Rejected struct {
	Collection string `json:"collection,omitempty"`
	Index      *int   `json:"index,omitempty"`
	Identity   string `json:"identity,omitempty"`
	Path       string `json:"path,omitempty"`
	Message    string `json:"message"`
	Error      string `json:"error"` // the whole one-line report entry
}

// Manager loads, compiles and publishes resource snapshots.
type Manager struct {
	path   string
	env    resources.Env
	opt    snapshot.Options
	holder *snapshot.Holder
	log    *slog.Logger

	mu     sync.Mutex // serialises applies
	seq    uint64
	status atomic.Pointer[Status]

	unknownSet    *metrics.Set
	unenforcedSet *metrics.Set
	// Startup holds the startup settings without runtime effect; set before
	// the first Apply. They are reported with every snapshot's own list.
	Startup []snapshot.Unenforced

	// OnApply, when set, runs after each successful apply with the new
	// snapshot (background checks restart for it). Set before the first Apply.
	OnApply func(*snapshot.Snapshot)

	// KeySets, when set, reports the JWKS providers' signing-key state for
	// /status/config (it lives outside the snapshot, in edge/authn).
	KeySets func() []KeySetState
}

// NewManager returns a manager for the resource file at path.
func NewManager(path string, env resources.Env, opt snapshot.Options, holder *snapshot.Holder, log *slog.Logger) *Manager {
	if log == nil {
		log = slog.Default()
	}
	m := &Manager{path: path, env: env, opt: opt, holder: holder, log: log}
	m.status.Store(&Status{State: StateNoSnapshot, ResourcesFile: path, Rejected: []Rejected{}, UnknownKinds: []resources.UnknownKind{}, Warnings: []string{}, Counts: map[string]int{}, Unenforced: []snapshot.Unenforced{}})
	return m
}

// Holder returns the published snapshot holder.
func (m *Manager) Holder() *snapshot.Holder { return m.holder }

// Status returns the current config status. The value must not be modified.
func (m *Manager) Status() *Status {
	s := m.status.Load()
	if m.KeySets == nil {
		return s
	}
	c := *s
	c.JWKS = m.KeySets()
	return &c
}

// Apply runs the pipeline on the file and publishes the result when valid.
// On failure the previous snapshot keeps serving and the state becomes
// degraded (or stays no_snapshot at startup). trigger labels the metric
// (startup, sighup, admin).
func (m *Manager) Apply(trigger string) *resources.Result {
	m.mu.Lock()
	defer m.mu.Unlock()
	start := time.Now()
	var res *resources.Result
	if m.path == "" {
		// No resource file (allowed when the admin API is on): the AI
		// gateway runs with no resources.
		res = resources.Load([]byte("_format_version: \"1\"\n"), m.env)
	} else {
		res = resources.LoadFile(m.path, m.env)
	}
	prev := m.status.Load()
	now := time.Now().UTC()
	next := *prev
	next.LastAttemptAt = &now
	next.LastTrigger = trigger
	next.Warnings = errorLines(res.Warnings)
	var snap *snapshot.Snapshot
	if res.Err() == nil {
		var cerr error
		if snap, cerr = snapshot.Compile(res.Resources, m.opt); cerr != nil {
			res.Errors = append(res.Errors, resources.Error{Index: -1, Msg: cerr.Error()})
			res.Resources = nil
		}
	}
	if err := res.Err(); err != nil {
		next.Rejected = rejected(res.Errors)
		if prev.State != StateNoSnapshot {
			next.State = StateDegraded
		}
		m.status.Store(&next)
		metrics.GetOrCreateCounter(`gw_config_apply_total{trigger="` + trigger + `",result="rejected"}`).Inc()
		m.log.Error("resource file rejected; previous snapshot keeps serving",
			"trigger", trigger, "file", m.path, "errors", len(res.Errors), "report", err.Error())
		return res
	}
	old := m.holder.Load()
	m.holder.Store(snap)
	if old != nil {
		old.Retire()
	}
	if m.OnApply != nil {
		m.OnApply(snap)
	}
	m.seq++
	next.State = StateSynced
	next.ApplySeq = m.seq
	next.AppliedAt = &now
	next.Rejected = []Rejected{}
	next.UnknownKinds = res.Resources.UnknownKinds
	if next.UnknownKinds == nil {
		next.UnknownKinds = []resources.UnknownKind{}
	}
	next.Counts = map[string]int{}
	for _, c := range res.Resources.Counts() {
		next.Counts[c.Collection] = c.Count
	}
	next.Unenforced = append(append([]snapshot.Unenforced{}, m.Startup...), snap.Unenforced...)
	m.status.Store(&next)
	m.publishUnknownKinds(res.Resources.UnknownKinds)
	m.publishUnenforced(next.Unenforced)
	for _, u := range next.Unenforced {
		m.log.Warn("configured but not enforced", "collection", u.Collection, "entry", u.Entry, "field", u.Field, "missing", u.Missing)
	}
	// Every apply of the resource file is a full one (the spec's trigger
	// "full"; "watch" belongs to store-driven incremental applies, which
	// this build does not have). Prometheus le buckets, so
	// histogram_quantile reads them.
	applyDuration.UpdateDuration(start)
	entries := 0
	for _, c := range res.Resources.Counts() {
		entries += c.Count
	}
	applyBatch.Update(float64(entries))
	metrics.GetOrCreateCounter(`gw_config_apply_total{trigger="` + trigger + `",result="applied"}`).Inc()
	for _, w := range next.Warnings {
		m.log.Warn("resource file warning", "warning", w)
	}
	m.log.Info("resource snapshot applied", "trigger", trigger, "apply_seq", m.seq,
		"duration_ms", time.Since(start).Milliseconds(), "unknown_kinds", len(next.UnknownKinds))
	return res
}

// publishUnknownKinds replaces the gw_config_unknown_kind_resources{kind} gauges.
func (m *Manager) publishUnknownKinds(list []resources.UnknownKind) {
	counts := map[string]int{}
	for _, u := range list {
		counts[u.Kind]++
	}
	set := metrics.NewSet()
	kinds := make([]string, 0, len(counts))
	for k := range counts {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	for _, k := range kinds {
		n := float64(counts[k])
		set.NewGauge(`gw_config_unknown_kind_resources{kind="`+EscapeLabelValue(k)+`"}`, func() float64 { return n })
	}
	metrics.RegisterSet(set)
	if m.unknownSet != nil {
		metrics.UnregisterSet(m.unknownSet, true)
	}
	m.unknownSet = set
}

// publishUnenforced replaces the gw_config_unenforced_resources{collection} gauges.
func (m *Manager) publishUnenforced(list []snapshot.Unenforced) {
	set := metrics.NewSet()
	for _, c := range snapshot.CountByCollection(list) {
		n := float64(c.Count)
		set.NewGauge(`gw_config_unenforced_resources{collection="`+EscapeLabelValue(c.Collection)+`"}`, func() float64 { return n })
	}
	metrics.RegisterSet(set)
	if m.unenforcedSet != nil {
		metrics.UnregisterSet(m.unenforcedSet, true)
	}
	m.unenforcedSet = set
}

// EscapeLabelValue escapes s for use inside a Prometheus label value.
func EscapeLabelValue(s string) string {
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '\\', '"':
			out = append(out, '\\', c)
		case '\n':
			out = append(out, '\\', 'n')
		default:
			out = append(out, c)
		}
	}
	return string(out)
}

func rejected(errs []resources.Error) []Rejected {
	out := make([]Rejected, len(errs))
	for i, e := range errs {
		r := Rejected{Collection: e.Collection, Identity: e.ID, Path: e.Path, Message: e.Msg, Error: e.String()}
		if e.Collection != "" && e.Index >= 0 {
			idx := e.Index
			r.Index = &idx
		}
		out[i] = r
	}
	return out
}

func errorLines(errs []resources.Error) []string {
	out := make([]string, len(errs))
	for i, e := range errs {
		out[i] = e.String()
	}
	return out
}
