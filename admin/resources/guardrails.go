package resources

import (
	"math"
	"sort"
	"strings"
	"time"

	yaml "go.yaml.in/yaml/v3"
)

// Guardrail kinds known to this build. Any other `kind` is skipped (see
// Resources.UnknownKinds), never an error, so a file written for a newer
// gateway still loads.
const (
	GuardrailKeyword                          = "keyword"
	GuardrailSemantic                         = "semantic"
	GuardrailCustom                           = "custom"
	GuardrailPII                              = "pii"
	GuardrailPresidio                         = "presidio"
	GuardrailOpenAIModeration                 = "openai_moderation"
	GuardrailLakera                           = "lakera"
	GuardrailAzureContentSafety               = "azure_content_safety"
	GuardrailAzureContentSafetyTextModeration = "azure_content_safety_text_moderation"
	GuardrailAliyunTextModeration             = "aliyun_text_moderation"
	GuardrailAliyunAIGuardrail                = "aliyun_ai_guardrail"
	GuardrailBedrock                          = "bedrock"
)

// Values of the common guardrail fields.
const (
	HookPointInput  = "input"
	HookPointOutput = "output"
	HookPointBoth   = "both"

	InputMessagesAll        = "all"
	InputMessagesLatestTurn = "latest_turn"

	EnforcementBlock   = "block"
	EnforcementMonitor = "monitor"

	StreamModeWindow     = "window"
	StreamModeBufferFull = "buffer_full"

	OnBufferExceededFailOpen   = "fail_open"
	OnBufferExceededFailClosed = "fail_closed"
)

// Guardrail defaults (spec "Limits").
const (
	DefaultGuardrailTimeoutMS       int64 = 5000
	DefaultGuardrailMaxBufferBytes  int64 = 256 << 10 // 262144; counts text, reasoning and tool-call arguments
	DefaultSemanticMaxScreenedTexts int64 = 8
	DefaultCustomMaxMemoryBytes     int64 = 16 << 20 // 16777216

	// RawBufferFactor: a held stream's raw-byte cap is this many times MaxBytes.
	RawBufferFactor = 128
)

// Guardrail is one guardrails entry of a known kind, with every default applied.
// Entries of an unknown kind are not Guardrails; they are listed in
// Resources.UnknownKinds.
type Guardrail struct {
	Index int
	ID    string // DeriveID(KindGuardrail, Name)
	Name  string
	Kind  string // one of the Guardrail* kind constants

	Enabled         bool   // default true
	HookPoint       string // HookPointInput, HookPointOutput or HookPointBoth (default)
	InputMessages   string // InputMessagesAll (default) or InputMessagesLatestTurn
	EnforcementMode string // EnforcementBlock (default) or EnforcementMonitor
	// FailOpen is the input-side policy when the check cannot complete.
	FailOpen bool
	// OutputFailOpen is the effective output-side policy. For keyword and pii
	// (which reject output_fail_open) it equals FailOpen.
	OutputFailOpen bool
	// TimeoutMS limits one backend call (custom: the whole hook call).
	// 0 for keyword and pii (in process) and bedrock (see BedrockGuardrailOptions.LatencyMode).
	TimeoutMS int64
	CreatedAt time.Time // zero when created_at is absent

	// Stream is nil unless the kind takes streaming controls (custom,
	// azure_content_safety_text_moderation and both Aliyun kinds).
	Stream *StreamControls
	// Buffer is nil unless the kind holds output in a buffer: the streaming
	// kinds plus pii, presidio, lakera and semantic.
	Buffer *BufferControls

	// Options holds the kind's own fields: *KeywordOptions, *SemanticGuardrailOptions,
	// *CustomScriptOptions, *PIIOptions, *PresidioOptions, *OpenAIModerationOptions,
	// *LakeraOptions, *AzureContentSafetyOptions, *AzureTextModerationOptions,
	// *AliyunTextModerationOptions, *AliyunAIGuardrailOptions or *BedrockGuardrailOptions.
	Options GuardrailOptions
}

// RunsOnInput reports whether the guardrail inspects requests.
func (g *Guardrail) RunsOnInput() bool { return g.HookPoint != HookPointOutput }

// RunsOnOutput reports whether the guardrail inspects responses.
func (g *Guardrail) RunsOnOutput() bool { return g.HookPoint != HookPointInput }

// Monitor reports enforcement_mode monitor (record, never block or rewrite).
func (g *Guardrail) Monitor() bool { return g.EnforcementMode == EnforcementMonitor }

// GuardrailOptions is the per-kind part of a Guardrail. The set of
// implementations is closed (one per kind constant).
type GuardrailOptions interface {
	GuardrailKind() string
}

// StreamControls are the streaming controls of a guardrail's output hook.
type StreamControls struct {
	Mode string // StreamModeWindow (default) or StreamModeBufferFull
	// WindowSize is 0 when unset: the stream engine picks its own window.
	WindowSize        int64
	WindowOverlapSize int64 // default 0; always < WindowSize when set
}

// BufferControls bound the output a guardrail holds before it can judge it.
type BufferControls struct {
	// MaxBytes counts assistant text, reasoning and tool-call arguments
	// (never SSE framing). Default DefaultGuardrailMaxBufferBytes.
	MaxBytes int64
	// OnExceeded is OnBufferExceededFailClosed (default) or
	// OnBufferExceededFailOpen. Kinds that do not accept on_buffer_exceeded
	// (pii, presidio, lakera) always fail closed.
	OnExceeded string
}

// RawCap is the raw-byte cap of a held stream (RawBufferFactor × MaxBytes),
// saturating instead of overflowing.
func (b *BufferControls) RawCap() int64 {
	if b.MaxBytes > math.MaxInt64/RawBufferFactor {
		return math.MaxInt64
	}
	return b.MaxBytes * RawBufferFactor
}

// guardrailKind describes one kind: its decoder and the common fields it rejects.
type guardrailKind struct {
	decode func(l *loader, g *Guardrail, o *obj) GuardrailOptions
	// Non-empty: the common field is rejected on this kind with this reason.
	noTimeout        string
	noOutputFailOpen string
}

// GuardrailKinds returns the kinds this build knows, sorted.
func GuardrailKinds() []string {
	out := make([]string, 0, len(guardrailKinds))
	for k := range guardrailKinds {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func (l *loader) decodeGuardrail(e *entry, o *obj) {
	name := o.reqStr("name")
	e.setID("name", name)
	kind := o.reqStr("kind")
	if strings.TrimSpace(kind) == "" {
		// Already reported. The kind decides which fields exist, so checking
		// the rest would only add "unknown field" noise. The partial entry is
		// kept so that attachments naming it still resolve.
		o.skipAll()
		l.res.Guardrails = append(l.res.Guardrails, &Guardrail{Index: e.idx, ID: DeriveID(KindGuardrail, name), Name: name})
		return
	}
	spec, known := guardrailKinds[kind]
	if !known {
		l.res.UnknownKinds = append(l.res.UnknownKinds, UnknownKind{Collection: CollGuardrails, Index: e.idx, Name: name, Kind: kind})
		o.warnf("kind", "unknown kind \""+kind+"\"; this build skips the entry and its attachments inspect nothing (known kinds: "+strings.Join(GuardrailKinds(), ", ")+")")
		o.skipAll()
		return
	}

	g := &Guardrail{
		Index: e.idx, ID: DeriveID(KindGuardrail, name), Name: name, Kind: kind,
		Enabled:         o.boolDefault("enabled", true),
		HookPoint:       HookPointBoth,
		InputMessages:   InputMessagesAll,
		EnforcementMode: EnforcementBlock,
	}
	if v, ok := o.enum("hook_point", HookPointInput, HookPointOutput, HookPointBoth); ok {
		g.HookPoint = v
	}
	if v, ok := o.enum("input_messages", InputMessagesAll, InputMessagesLatestTurn); ok {
		g.InputMessages = v
	}
	if _, ok := o.str("direction"); ok {
		o.warnf("direction", "legacy field, ignored; hook_point decides where a file guardrail runs")
	}
	if v, ok := o.enum("enforcement_mode", EnforcementBlock, EnforcementMonitor); ok {
		g.EnforcementMode = v
	}
	g.FailOpen = o.boolDefault("fail_open", false)
	if spec.noOutputFailOpen != "" {
		o.reject("output_fail_open", spec.noOutputFailOpen)
		g.OutputFailOpen = g.FailOpen
	} else {
		g.OutputFailOpen = o.boolDefault("output_fail_open", false)
	}
	if spec.noTimeout != "" {
		o.reject("timeout_ms", spec.noTimeout)
	} else {
		g.TimeoutMS = DefaultGuardrailTimeoutMS
		if v, ok := o.intMin("timeout_ms", 1); ok {
			g.TimeoutMS = v
		}
	}
	g.CreatedAt = o.guardTimestamp("created_at")

	g.Options = spec.decode(l, g, o)
	o.guardFinish(kind)
	l.res.Guardrails = append(l.res.Guardrails, g)
}

// checkGuardrailIdentities enforces unique names across every guardrails
// entry, including those of an unknown kind.
func (l *loader) checkGuardrailIdentities() {
	l.checkUnique(CollGuardrails, "name", l.guardrailRefs())
}

// guardrailRefs lists every guardrails entry (known and unknown kinds) in file order.
func (l *loader) guardrailRefs() []identityRef {
	refs := make([]identityRef, 0, len(l.res.Guardrails)+len(l.res.UnknownKinds))
	for _, g := range l.res.Guardrails {
		refs = append(refs, identityRef{g.Index, g.Name})
	}
	for _, u := range l.res.UnknownKinds {
		if u.Collection == CollGuardrails {
			refs = append(refs, identityRef{u.Index, u.Name})
		}
	}
	sort.Slice(refs, func(i, j int) bool { return refs[i].idx < refs[j].idx })
	return refs
}

// guardrailIDs lists guardrails (unknown kinds included: their IDs are
// stable too) and attachments, each in file order.
func (l *loader) guardrailIDs() []EntryID {
	refs := l.guardrailRefs()
	out := make([]EntryID, 0, len(refs)+len(l.res.GuardrailAttachments))
	for _, r := range refs {
		out = append(out, EntryID{CollGuardrails, r.id, DeriveID(KindGuardrail, r.id)})
	}
	for _, a := range l.res.GuardrailAttachments {
		out = append(out, EntryID{CollGuardrailAttachments, a.Identity(), a.ID})
	}
	return out
}

// --- obj helpers used by the guardrail decoders ---

// guardFinish reports every field the kind's decoder did not read. It runs
// before the generic finish so the message can name the kind.
func (o *obj) guardFinish(kind string) {
	for i, k := range o.keys {
		if o.used[i] {
			continue
		}
		o.used[i] = true
		if k.ShortTag() == "!!merge" || k.Value == "<<" {
			o.errf("<<", "unknown field (YAML merge keys are not expanded)")
			continue
		}
		o.errf(k.Value, o.unknownField(k.Value, " for kind "+kind))
	}
}

// guardReqEnum reads a required string that must be one of allowed.
func (o *obj) guardReqEnum(name string, allowed ...string) string {
	if !o.has(name) {
		o.raw(name)
		o.errf(name, "required; one of "+strings.Join(allowed, ", "))
		return ""
	}
	return o.guardEnum(name, allowed...)
}

// guardEnum is enum that rejects an empty string with a message of its own
// (an empty action, default_action, operator or language is a save-time error).
func (o *obj) guardEnum(name string, allowed ...string) string {
	if o.d.desc != nil {
		o.d.desc.enum(o.fieldPath(name), allowed)
	}
	n := o.raw(name)
	if n == nil {
		return ""
	}
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!str" && strings.TrimSpace(n.Value) == "" {
		o.errf(name, "must not be empty; omit it for the default, or use one of "+strings.Join(allowed, ", "))
		return ""
	}
	s, refs, ok := o.d.scalarString(o.e, o.fieldPath(name), n)
	if !ok {
		return ""
	}
	for _, a := range allowed {
		if s == a {
			return s
		}
	}
	shown := "\"" + s + "\""
	if refs > 0 {
		shown = "value" // interpolated: never echo
	}
	o.errf(name, "unknown value "+shown+"; allowed: "+strings.Join(allowed, ", "))
	return ""
}

// guardCredential reads a required credential. A value written literally
// (no ${VAR}) loads with a warning. The value never enters a message.
func (o *obj) guardCredential(name string) Secret {
	if !o.has(name) {
		o.raw(name)
		o.errf(name, "required; supply it as ${VAR}")
		return Secret{}
	}
	return o.d.credentialAt(o.e, o.fieldPath(name), o.raw(name))
}

func (d *decoder) credentialAt(e *entry, path string, n *yaml.Node) Secret {
	s, refs, ok := d.scalarString(e, path, n)
	if !ok {
		return Secret{}
	}
	if strings.TrimSpace(s) == "" {
		d.errAt(e, path, "must not be empty")
		return Secret{}
	}
	if refs == 0 {
		d.warnAt(e, path, "credential written literally; supply it as ${VAR} so it stays out of the file")
	}
	return NewSecret(s)
}

// guardURL reads an absolute http(s) URL. The message never echoes the URL.
func (o *obj) guardURL(name string, required bool) string {
	if required && !o.has(name) {
		o.raw(name)
		o.errf(name, "required")
		return ""
	}
	s, ok := o.str(name)
	if !ok {
		return ""
	}
	if strings.TrimSpace(s) == "" {
		o.errf(name, "must not be empty")
		return ""
	}
	if msg := checkBaseURL(s); msg != "" {
		o.errf(name, msg)
		return ""
	}
	return s
}

// guardTimestamp reads an optional RFC 3339 time, quoted or not (YAML tags
// an unquoted 2026-01-02T03:04:05Z as a timestamp).
func (o *obj) guardTimestamp(name string) time.Time {
	n := o.raw(name)
	if n == nil {
		return time.Time{}
	}
	var s string
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!timestamp" {
		s = n.Value
	} else {
		var ok bool
		if s, _, ok = o.d.scalarString(o.e, o.fieldPath(name), n); !ok {
			return time.Time{}
		}
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		o.errf(name, "must be an RFC 3339 timestamp such as 2026-01-31T09:00:00Z")
		return time.Time{}
	}
	return t
}

// decodeStreamControls reads stream_processing_mode, window_size and window_overlap_size.
func decodeStreamControls(o *obj) *StreamControls {
	s := &StreamControls{Mode: StreamModeWindow}
	if v, ok := o.enum("stream_processing_mode", StreamModeWindow, StreamModeBufferFull); ok {
		s.Mode = v
	}
	if v, ok := o.intMin("window_size", 1); ok {
		s.WindowSize = v
	}
	if v, ok := o.intMin("window_overlap_size", 0); ok {
		switch {
		case !o.has("window_size"):
			o.errf("window_overlap_size", "requires window_size")
		case s.WindowSize > 0 && v >= s.WindowSize:
			o.errf("window_overlap_size", "must be less than window_size")
		default:
			s.WindowOverlapSize = v
		}
	}
	if s.Mode == StreamModeBufferFull {
		for _, f := range []string{"window_size", "window_overlap_size"} {
			if o.has(f) {
				o.warnf(f, "ignored with stream_processing_mode buffer_full")
			}
		}
	}
	return s
}

// decodeBufferControls reads max_buffer_bytes and, when the kind accepts it,
// on_buffer_exceeded. zeroRejected: `max_buffer_bytes: 0` is an error (pii,
// presidio); elsewhere 0 means the default.
func decodeBufferControls(o *obj, kind string, zeroRejected, onExceeded bool) *BufferControls {
	b := &BufferControls{MaxBytes: DefaultGuardrailMaxBufferBytes, OnExceeded: OnBufferExceededFailClosed}
	if v, ok := o.int("max_buffer_bytes"); ok {
		switch {
		case v < 0:
			o.errf("max_buffer_bytes", "must not be negative")
		case v == 0 && zeroRejected:
			o.errf("max_buffer_bytes", "must be greater than 0 on kind "+kind+"; omit it for the default 262144 (256 KiB)")
		case v > 0:
			b.MaxBytes = v
		}
	}
	if onExceeded {
		if v, ok := o.enum("on_buffer_exceeded", OnBufferExceededFailOpen, OnBufferExceededFailClosed); ok {
			b.OnExceeded = v
		}
	}
	return b
}
