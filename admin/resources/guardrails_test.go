package resources

import (
	"strings"
	"testing"
	"time"
)

// grBase has an embedding model and a caller key; tests append guardrails entries.
const grBase = baseFile + `  - display_name: emb
    provider: openai
    model_name: text-embedding-3-small
    provider_key: oa
    embedding: {dimensions: 1536}
api_keys:
  - display_name: app
    key_env: CALLER_A
guardrails:
`

// grEnv adds the guardrail backend credentials to testEnv.
var grEnv = func() map[string]string {
	m := map[string]string{
		"LAKERA_KEY":     "lk-secret-value",
		"AZURE_CS_KEY":   "az-secret-value",
		"ALIYUN_SECRET":  "ali-secret-value",
		"AWS_SECRET":     "aws-secret-value",
		"WEBHOOK_TOKEN":  "hook-secret-value",
		"OPENAI_MOD_KEY": "sk-mod-secret",
	}
	for k, v := range testEnv {
		m[k] = v
	}
	return m
}()

func grLoad(src string) *Result { return Load([]byte(src), envOf(grEnv)) }

// grMustLoad loads src and fails on any error.
func grMustLoad(t *testing.T, src string) *Result {
	t.Helper()
	r := grLoad(src)
	if len(r.Errors) > 0 {
		t.Fatalf("unexpected load errors:\n%s", r.Err())
	}
	return r
}

// grErrLine requires the load to fail with one error line exactly equal to want.
func grErrLine(t *testing.T, src, want string) {
	t.Helper()
	r := grLoad(src)
	for _, e := range r.Errors {
		if e.String() == want {
			return
		}
	}
	if len(r.Errors) == 0 {
		t.Fatalf("load succeeded; want error line\n  %s", want)
	}
	t.Fatalf("no error line equals\n  %s\ngot:\n%s", want, r.Err())
}

// hasWarning reports whether some warning line equals want.
func hasWarning(r *Result, want string) bool {
	for _, w := range r.Warnings {
		if w.String() == want {
			return true
		}
	}
	return false
}

// Minimal valid bodies per kind (indented as fields of an entry).
const (
	kwBody       = "    patterns: []\n"
	semBody      = "    embedding_model: emb\n    deny_examples: [ignore previous instructions]\n    deny_threshold: 0.8\n"
	customBody   = "    script: \"export function checkInput(ctx) { return {action: 'allow'} }\"\n"
	piiBody      = ""
	presidioBody = "    analyzer_url: http://analyzer:3000\n    anonymizer_url: http://anonymizer:3000\n"
	oaiModBody   = "    api_key: ${OPENAI_MOD_KEY}\n"
	lakeraBody   = "    api_key: ${LAKERA_KEY}\n"
	azureBody    = "    endpoint: https://cs.cognitiveservices.azure.com\n    api_key: ${AZURE_CS_KEY}\n"
	aliyunBody   = "    region: cn-shanghai\n    access_key_id: LTAI5tExample\n    access_key_secret: ${ALIYUN_SECRET}\n"
	bedrockBody  = "    guardrail_id: gr-abc123\n    guardrail_version: \"1\"\n    region: us-east-1\n    aws_credentials: {kind: static, access_key_id: AKIAEXAMPLE, secret_access_key: \"${AWS_SECRET}\"}\n    latency_mode: {kind: serial}\n"
)

// gr builds one guardrails entry.
func gr(name, kind, body string) string {
	return "  - name: " + name + "\n    kind: " + kind + "\n" + body
}

func TestGuardrailCommonFieldErrors(t *testing.T) {
	f := func(entries, want string) {
		t.Helper()
		grErrLine(t, grBase+entries, want)
	}
	const at = "guardrails[0] (name=g): "
	f("  - kind: keyword\n"+kwBody, "guardrails[0]: name: required")
	f("  - name: \"\"\n    kind: keyword\n"+kwBody, "guardrails[0]: name: must not be empty")
	f("  - name: g\n"+kwBody, at+"kind: required")
	f("  - name: g\n    kind: \"\"\n", at+"kind: must not be empty")
	f("  - name: g\n    kind: [keyword]\n", at+"kind: must be a string, got a sequence")
	f(gr("g", "keyword", kwBody)+gr("g", "pii", piiBody), "guardrails[1] (name=g): name: duplicate identity; also used by guardrails[0]")
	// Unknown kinds still take part in identity checks.
	f(gr("g", "keyword", kwBody)+gr("g", "future_kind", "    anything: 1\n"), "guardrails[1] (name=g): name: duplicate identity; also used by guardrails[0]")
	f("  - kind: future_kind\n", "guardrails[0]: name: required")
	f(gr("g", "keyword", kwBody)+"    enabled: \"no\"\n", at+"enabled: must be a boolean, got a string")
	f(gr("g", "keyword", kwBody)+"    hook_point: pre\n", at+`hook_point: unknown value "pre"; allowed: input, output, both`)
	f(gr("g", "keyword", kwBody)+"    input_messages: last\n", at+`input_messages: unknown value "last"; allowed: all, latest_turn`)
	f(gr("g", "keyword", kwBody)+"    direction: 3\n", at+"direction: must be a string, got an integer")
	f(gr("g", "keyword", kwBody)+"    enforcement_mode: log\n", at+`enforcement_mode: unknown value "log"; allowed: block, monitor`)
	f(gr("g", "keyword", kwBody)+"    fail_open: 1\n", at+"fail_open: must be a boolean, got an integer")
	f(gr("g", "lakera", lakeraBody)+"    output_fail_open: yes\n", at+"output_fail_open: must be a boolean, got a string")
	f(gr("g", "keyword", kwBody)+"    output_fail_open: true\n", at+"output_fail_open: not accepted on kind keyword; fail_open governs both input and output")
	f(gr("g", "pii", piiBody)+"    output_fail_open: false\n", at+"output_fail_open: not accepted on kind pii; fail_open governs both input and output")
	f(gr("g", "keyword", kwBody)+"    timeout_ms: 100\n", at+"timeout_ms: not accepted on kind keyword (patterns are evaluated in process)")
	f(gr("g", "pii", piiBody)+"    timeout_ms: 100\n", at+"timeout_ms: not accepted on kind pii (detectors are evaluated in process)")
	f(gr("g", "bedrock", bedrockBody)+"    timeout_ms: 100\n", at+"timeout_ms: not accepted on kind bedrock; use latency_mode: {kind: timed, timeout_ms: ...}")
	f(gr("g", "lakera", lakeraBody)+"    timeout_ms: 0\n", at+"timeout_ms: must be between 1 and 9223372036854775807, got 0")
	f(gr("g", "lakera", lakeraBody)+"    timeout_ms: \"5s\"\n", at+"timeout_ms: must be an integer, got a string")
	f(gr("g", "keyword", kwBody)+"    created_at: yesterday\n", at+"created_at: must be an RFC 3339 timestamp such as 2026-01-31T09:00:00Z")
	f(gr("g", "keyword", kwBody)+"    created_at: 2026-01-31\n", at+"created_at: must be an RFC 3339 timestamp such as 2026-01-31T09:00:00Z")
	f(gr("g", "keyword", kwBody)+"    id: abc\n", at+"id: unknown field for kind keyword")
	f(gr("g", "keyword", kwBody)+"    config: {patterns: []}\n", at+"config: unknown field for kind keyword")
}

func TestGuardrailCommonDefaults(t *testing.T) {
	r := grMustLoad(t, grBase+gr("kw", "keyword", kwBody)+gr("lk", "lakera", lakeraBody+`    enabled: false
    hook_point: output
    input_messages: latest_turn
    enforcement_mode: monitor
    fail_open: true
    output_fail_open: true
    timeout_ms: 1500
    created_at: "2026-03-01T10:00:00+08:00"
`)+gr("pii", "pii", "    fail_open: true\n    created_at: 2026-03-01T02:00:00Z\n"))
	gs := r.Resources.Guardrails
	kw, lk, pii := gs[0], gs[1], gs[2]
	if !kw.Enabled || kw.HookPoint != HookPointBoth || kw.InputMessages != InputMessagesAll || kw.EnforcementMode != EnforcementBlock ||
		kw.FailOpen || kw.OutputFailOpen || kw.TimeoutMS != 0 || !kw.CreatedAt.IsZero() || kw.Monitor() {
		t.Fatalf("keyword defaults: %+v", kw)
	}
	if !kw.RunsOnInput() || !kw.RunsOnOutput() {
		t.Fatalf("hook both must run on both sides")
	}
	if kw.ID != DeriveID(KindGuardrail, "kw") || kw.Index != 0 || kw.Kind != GuardrailKeyword {
		t.Fatalf("identity: %+v", kw)
	}
	want := time.Date(2026, 3, 1, 2, 0, 0, 0, time.UTC)
	if lk.Enabled || lk.HookPoint != HookPointOutput || lk.InputMessages != InputMessagesLatestTurn || !lk.Monitor() ||
		!lk.FailOpen || !lk.OutputFailOpen || lk.TimeoutMS != 1500 || !lk.CreatedAt.Equal(want) || lk.RunsOnInput() {
		t.Fatalf("lakera fields: %+v", lk)
	}
	if lakera := (gs[1].Options).(*LakeraOptions); lakera == nil {
		t.Fatalf("lakera options missing")
	}
	// Unquoted YAML timestamps are accepted; fail_open governs output on pii.
	if !pii.CreatedAt.Equal(want) || !pii.OutputFailOpen || pii.TimeoutMS != 0 {
		t.Fatalf("pii: %+v", pii)
	}
	// Backend kinds default timeout_ms to 5000.
	r = grMustLoad(t, grBase+gr("lk", "lakera", lakeraBody))
	if got := r.Resources.Guardrails[0].TimeoutMS; got != DefaultGuardrailTimeoutMS {
		t.Fatalf("timeout_ms: got %d; want %d", got, DefaultGuardrailTimeoutMS)
	}
}

func TestGuardrailDirectionWarns(t *testing.T) {
	r := grMustLoad(t, grBase+gr("g", "keyword", kwBody)+"    direction: request\n")
	if !hasWarning(r, "guardrails[0] (name=g): direction: legacy field, ignored; hook_point decides where a file guardrail runs") {
		t.Fatalf("no direction warning: %v", r.Warnings)
	}
	if r.Resources.Guardrails[0].HookPoint != HookPointBoth {
		t.Fatalf("direction must not change hook_point")
	}
}

func TestGuardrailUnknownKind(t *testing.T) {
	r := grMustLoad(t, grBase+gr("a", "keyword", kwBody)+gr("future", "quantum_filter", "    whatever: {nested: true}\n    timeout_ms: -4\n")+gr("b", "pii", piiBody))
	res := r.Resources
	if len(res.Guardrails) != 2 || res.Guardrails[0].Name != "a" || res.Guardrails[1].Name != "b" || res.Guardrails[1].Index != 2 {
		t.Fatalf("unknown kind must not be a Guardrail: %+v", res.Guardrails)
	}
	want := UnknownKind{Collection: "guardrails", Index: 1, Name: "future", Kind: "quantum_filter"}
	if len(res.UnknownKinds) != 1 || res.UnknownKinds[0] != want {
		t.Fatalf("UnknownKinds: got %+v; want %+v", res.UnknownKinds, want)
	}
	if len(r.Warnings) != 1 || !strings.HasPrefix(r.Warnings[0].String(), `guardrails[1] (name=future): kind: unknown kind "quantum_filter"; this build skips the entry`) {
		t.Fatalf("warnings: %v", r.Warnings)
	}
	// Its ID is still listed, in file order.
	var got []string
	for _, id := range r.IDs {
		if id.Collection == CollGuardrails {
			got = append(got, id.Identity)
			if id.ID != DeriveID(KindGuardrail, id.Identity) {
				t.Fatalf("ID of %s: %s", id.Identity, id.ID)
			}
		}
	}
	if strings.Join(got, ",") != "a,future,b" {
		t.Fatalf("guardrail IDs: %v", got)
	}
}

func TestGuardrailKeyword(t *testing.T) {
	f := func(body, want string) {
		t.Helper()
		grErrLine(t, grBase+gr("kw", "keyword", body), "guardrails[0] (name=kw): "+want)
	}
	f("", "patterns: required; use [] for a guardrail that matches nothing")
	f("    patterns: ~\n", "patterns: required; use [] for a guardrail that matches nothing")
	f("    patterns: secret\n", "patterns: must be a sequence, got a string")
	f("    patterns: [{value: x}]\n", "patterns[0].kind: required; one of literal, regex")
	f("    patterns: [{kind: glob, value: x}]\n", `patterns[0].kind: unknown value "glob"; allowed: literal, regex`)
	f("    patterns: [{kind: literal}]\n", "patterns[0].value: required")
	f("    patterns: [{kind: literal, value: \"\"}]\n", "patterns[0].value: must not be empty")
	f("    patterns: [{kind: literal, value: a, flags: i}]\n", "patterns[0].flags: unknown field")
	f("    patterns: [x]\n", "patterns[0]: must be a mapping, got a string")
	f("    patterns: [{kind: literal, value: ok}, {kind: regex, value: \"(PROJECT-ZEUS\"}]\n", "patterns[1].value: invalid regex: missing closing ) (Go RE2 syntax; lookarounds and backreferences are not supported)")
	f("    patterns: [{kind: regex, value: \"(?=pw)x\"}]\n", "patterns[0].value: invalid regex: invalid or unsupported Perl syntax (Go RE2 syntax; lookarounds and backreferences are not supported)")
	f(kwBody+"    max_buffer_bytes: 1024\n", "max_buffer_bytes: unknown field for kind keyword")
	f(kwBody+"    window_size: 10\n", "window_size: unknown field for kind keyword")

	// The pattern text never appears in an error.
	r := grLoad(grBase + gr("kw", "keyword", "    patterns: [{kind: regex, value: \"(PROJECT-ZEUS\"}]\n"))
	if strings.Contains(r.Err().Error(), "ZEUS") {
		t.Fatalf("error echoes the pattern: %s", r.Err())
	}

	res := grMustLoad(t, grBase+gr("kw", "keyword", "    patterns:\n      - {kind: literal, value: PROJECT-ZEUS}\n      - {kind: regex, value: \"(?i)sk-[a-z0-9]{20,}\"}\n"))
	k := res.Resources.Guardrails[0].Options.(*KeywordOptions)
	if len(k.Patterns) != 2 || k.Patterns[0].Kind != "literal" || k.Patterns[0].Regexp != nil || k.Patterns[1].Regexp == nil ||
		!k.Patterns[1].Regexp.MatchString("SK-abcdefghijklmnopqrstu") {
		t.Fatalf("patterns: %+v", k.Patterns)
	}
	// An empty list loads and matches nothing.
	res = grMustLoad(t, grBase+gr("kw", "keyword", kwBody))
	if k := res.Resources.Guardrails[0].Options.(*KeywordOptions); k.Patterns == nil || len(k.Patterns) != 0 {
		t.Fatalf("empty patterns: %+v", k)
	}
	if g := res.Resources.Guardrails[0]; g.Stream != nil || g.Buffer != nil {
		t.Fatalf("keyword has no stream or buffer controls")
	}
}

func TestGuardrailSemantic(t *testing.T) {
	f := func(body, want string) {
		t.Helper()
		grErrLine(t, grBase+gr("sem", "semantic", body), "guardrails[0] (name=sem): "+want)
	}
	f("    deny_examples: []\n", "embedding_model: required")
	f("    embedding_model: nope\n", `embedding_model: unknown embedding model "nope"; available: emb`)
	f("    embedding_model: gpt\n", `embedding_model: model "gpt" has no embedding block; available embedding models: emb`)
	f("    embedding_model: emb\n    deny_examples: [a]\n", "deny_threshold: required when deny_examples is non-empty (thresholds have no default)")
	f("    embedding_model: emb\n    allow_examples: [a]\n", "allow_threshold: required when allow_examples is non-empty (thresholds have no default)")
	f("    embedding_model: emb\n    deny_examples: [a]\n    deny_threshold: 1.5\n", "deny_threshold: must be between 0 and 1")
	f("    embedding_model: emb\n    allow_examples: [a]\n    allow_threshold: -0.1\n", "allow_threshold: must be between 0 and 1")
	f("    embedding_model: emb\n    deny_examples: [\"\"]\n    deny_threshold: 0.5\n", "deny_examples[0]: must not be empty")
	f(semBody+"    text_source: system\n", `text_source: unknown value "system"; allowed: user_messages, all_messages`)
	f(semBody+"    max_screened_texts: 0\n", "max_screened_texts: must be between 1 and 9223372036854775807, got 0")
	f(semBody+"    max_buffer_bytes: -1\n", "max_buffer_bytes: must not be negative")
	f(semBody+"    on_buffer_exceeded: drop\n", `on_buffer_exceeded: unknown value "drop"; allowed: fail_open, fail_closed`)
	f(semBody+"    stream_processing_mode: window\n", "stream_processing_mode: unknown field for kind semantic")

	r := grMustLoad(t, grBase+gr("sem", "semantic", semBody+`    allow_examples: [what is the weather]
    allow_threshold: 0.9
    text_source: all_messages
    max_screened_texts: 3
    timeout_ms: 800
    max_buffer_bytes: 0
    on_buffer_exceeded: fail_open
    output_fail_open: true
`))
	g := r.Resources.Guardrails[0]
	s := g.Options.(*SemanticGuardrailOptions)
	if s.EmbeddingModel == nil || s.EmbeddingModel.DisplayName != "emb" || s.DenyThreshold != 0.8 || s.AllowThreshold != 0.9 ||
		s.TextSource != "all_messages" || s.MaxScreenedTexts != 3 || !s.Active() || len(s.AllowExamples) != 1 {
		t.Fatalf("semantic: %+v", s)
	}
	// max_buffer_bytes: 0 means the default outside pii and presidio.
	if g.Buffer == nil || g.Buffer.MaxBytes != DefaultGuardrailMaxBufferBytes || g.Buffer.OnExceeded != OnBufferExceededFailOpen || g.Stream != nil {
		t.Fatalf("semantic buffer: %+v stream %+v", g.Buffer, g.Stream)
	}
	if g.TimeoutMS != 800 || !g.OutputFailOpen {
		t.Fatalf("semantic common: %+v", g)
	}
	// Both lists empty: loads, inactive, warned; a lone threshold is warned.
	r = grMustLoad(t, grBase+gr("sem", "semantic", "    embedding_model: emb\n    deny_threshold: 0.5\n"))
	s = r.Resources.Guardrails[0].Options.(*SemanticGuardrailOptions)
	if s.Active() || s.MaxScreenedTexts != 8 || s.TextSource != "user_messages" {
		t.Fatalf("inactive semantic: %+v", s)
	}
	if !hasWarning(r, "guardrails[0] (name=sem): deny_threshold: ignored while deny_examples is empty") ||
		!hasWarning(r, "guardrails[0] (name=sem): deny_examples and allow_examples are both empty; the guardrail loads but inspects nothing") {
		t.Fatalf("warnings: %v", r.Warnings)
	}
}

func TestGuardrailCustom(t *testing.T) {
	f := func(body, want string) {
		t.Helper()
		grErrLine(t, grBase+gr("js", "custom", body), "guardrails[0] (name=js): "+want)
	}
	f("", "script: required")
	f("    script: \"  \"\n", "script: must not be empty")
	f("    script: \"function checkInput(ctx) {}\"\n", "script: must be an ES module that exports checkInput, checkOutput or both (no export found)")
	f("    script: \"export function check(ctx) {}\"\n", "script: must export checkInput, checkOutput or both")
	f("    script: \"export function checkInputs(ctx) {}\"\n", "script: must export checkInput, checkOutput or both")
	f(customBody+"    secrets: {TOKEN: \"\"}\n", "secrets.TOKEN: must not be empty")
	f(customBody+"    secrets: {TOKEN: 5}\n", "secrets.TOKEN: must be a string, got an integer")
	f(customBody+"    secrets: [a]\n", "secrets: must be a mapping, got a sequence")
	f(customBody+"    max_memory_bytes: 0\n", "max_memory_bytes: must be between 1 and 9223372036854775807, got 0")
	f(customBody+"    stream_processing_mode: chunked\n", `stream_processing_mode: unknown value "chunked"; allowed: window, buffer_full`)
	f(customBody+"    window_size: 0\n", "window_size: must be between 1 and 9223372036854775807, got 0")
	f(customBody+"    window_size: 100\n    window_overlap_size: 100\n", "window_overlap_size: must be less than window_size")
	f(customBody+"    window_size: 100\n    window_overlap_size: -1\n", "window_overlap_size: must be between 0 and 9223372036854775807, got -1")
	f(customBody+"    window_overlap_size: 10\n", "window_overlap_size: requires window_size")
	f(customBody+"    max_buffer_bytes: -10\n", "max_buffer_bytes: must not be negative")
	f(customBody+"    on_buffer_exceeded: truncate\n", `on_buffer_exceeded: unknown value "truncate"; allowed: fail_open, fail_closed`)
	f(customBody+"    memory: 5\n", "memory: unknown field for kind custom")

	r := grMustLoad(t, grBase+gr("js", "custom", `    script: |
      export async function checkInput(ctx) { return {action: "allow"}; }
      export async function checkOutput(ctx) { return {action: "block", reason: ctx.model}; }
    secrets: {WEBHOOK: "${WEBHOOK_TOKEN}", LITERAL: "plain-text-secret"}
    timeout_ms: 2000
    max_memory_bytes: 33554432
    stream_processing_mode: window
    window_size: 512
    window_overlap_size: 64
    max_buffer_bytes: 65536
`))
	g := r.Resources.Guardrails[0]
	c := g.Options.(*CustomScriptOptions)
	if !c.HasCheckInput || !c.HasCheckOutput || c.MaxMemoryBytes != 33554432 || g.TimeoutMS != 2000 ||
		c.Secrets["WEBHOOK"].Reveal() != "hook-secret-value" || c.Secrets["LITERAL"].Reveal() != "plain-text-secret" {
		t.Fatalf("custom: %+v", c)
	}
	if *g.Stream != (StreamControls{Mode: StreamModeWindow, WindowSize: 512, WindowOverlapSize: 64}) ||
		*g.Buffer != (BufferControls{MaxBytes: 65536, OnExceeded: OnBufferExceededFailClosed}) {
		t.Fatalf("custom controls: %+v %+v", g.Stream, g.Buffer)
	}
	if !hasWarning(r, "guardrails[0] (name=js): secrets.LITERAL: credential written literally; supply it as ${VAR} so it stays out of the file") {
		t.Fatalf("no literal-secret warning: %v", r.Warnings)
	}
	for _, w := range r.Warnings {
		if strings.Contains(w.String(), "plain-text-secret") {
			t.Fatalf("warning echoes the secret: %s", w)
		}
	}
	// Defaults.
	r = grMustLoad(t, grBase+gr("js", "custom", customBody+"    hook_point: output\n"))
	g = r.Resources.Guardrails[0]
	c = g.Options.(*CustomScriptOptions)
	if c.MaxMemoryBytes != DefaultCustomMaxMemoryBytes || g.TimeoutMS != 5000 || c.HasCheckOutput ||
		*g.Stream != (StreamControls{Mode: StreamModeWindow}) || g.Buffer.MaxBytes != 262144 || g.Buffer.OnExceeded != OnBufferExceededFailClosed {
		t.Fatalf("custom defaults: %+v %+v %+v", c, g.Stream, g.Buffer)
	}
	if !hasWarning(r, "guardrails[0] (name=js): script: hook_point is output but the script has no checkOutput; the guardrail inspects nothing") {
		t.Fatalf("no hook warning: %v", r.Warnings)
	}
	// buffer_full makes window sizes moot.
	r = grMustLoad(t, grBase+gr("js", "custom", customBody+"    stream_processing_mode: buffer_full\n    window_size: 10\n"))
	if !hasWarning(r, "guardrails[0] (name=js): window_size: ignored with stream_processing_mode buffer_full") {
		t.Fatalf("no buffer_full warning: %v", r.Warnings)
	}
}

func TestGuardrailPII(t *testing.T) {
	f := func(body, want string) {
		t.Helper()
		grErrLine(t, grBase+gr("x", "keyword", kwBody)+gr("y", "keyword", kwBody)+gr("pii-mask", "pii", body), "guardrails[2] (name=pii-mask): "+want)
	}
	f("    custom_patterns: [{name: ticket, regex: \"TCK-(\\\\d+\"}]\n", "custom_patterns[0].regex: invalid regex: missing closing ) (Go RE2 syntax; lookarounds and backreferences are not supported)")
	f("    custom_patterns: [{name: ticket}]\n", "custom_patterns[0].regex: required")
	f("    custom_patterns: [{regex: x}]\n", "custom_patterns[0].name: required")
	f("    custom_patterns: [{name: "+strings.Repeat("n", 65)+", regex: x}]\n", "custom_patterns[0].name: must be at most 64 characters, got 65")
	f("    custom_patterns: [{name: email, regex: x}]\n", `custom_patterns[0].name: "email" is a built-in detector name; choose another`)
	f("    custom_patterns: [{name: t, regex: a}, {name: t, regex: b}]\n", "custom_patterns[1].name: duplicate custom pattern name; also used by custom_patterns[0]")
	f("    custom_patterns: [{name: t, regex: \"a*\"}]\n", "custom_patterns[0].regex: matches the empty string; a pii pattern must match at least one character")
	f("    custom_patterns: [{name: t, regex: a, action: \"\"}]\n", "custom_patterns[0].action: must not be empty; omit it for the default, or use one of mask, block")
	f("    custom_patterns: [{name: t, regex: a, action: drop}]\n", `custom_patterns[0].action: unknown value "drop"; allowed: mask, block`)
	f("    custom_patterns: [{name: t, regex: a, label: x}]\n", "custom_patterns[0].label: unknown field")
	f("    detectors: [email, phone]\n", `detectors[1]: unknown detector "phone"; built-in detectors: email, china_mobile, china_id_card, bank_card, us_ssn, ip_address, api_key, jwt, private_key (use custom_patterns for others)`)
	f("    detectors: [{name: ssn}]\n", `detectors[0].name: unknown detector "ssn"; built-in detectors: email, china_mobile, china_id_card, bank_card, us_ssn, ip_address, api_key, jwt, private_key (use custom_patterns for others)`)
	f("    detectors: [email, {name: email, action: block}]\n", `detectors[1].name: detector "email" is already listed at detectors[0]`)
	f("    detectors: [{name: email, action: \"\"}]\n", "detectors[0].action: must not be empty; omit it for the default, or use one of mask, block")
	f("    detectors: [{name: email, action: hash}]\n", `detectors[0].action: unknown value "hash"; allowed: mask, block`)
	f("    detectors: [{action: block}]\n", "detectors[0].name: required")
	f("    detectors: [{name: jwt, score: 1}]\n", "detectors[0].score: unknown field")
	f("    detectors: [3]\n", "detectors[0]: must be a name or a mapping {name, action}, got an integer")
	f("    detectors: [\"\"]\n", "detectors[0]: must not be empty")
	f("    default_action: \"\"\n", "default_action: must not be empty; omit it for the default, or use one of mask, block")
	f("    default_action: redact\n", `default_action: unknown value "redact"; allowed: mask, block`)
	f("    max_buffer_bytes: 0\n", "max_buffer_bytes: must be greater than 0 on kind pii; omit it for the default 262144 (256 KiB)")
	f("    max_buffer_bytes: -1\n", "max_buffer_bytes: must not be negative")
	f("    on_buffer_exceeded: fail_open\n", "on_buffer_exceeded: unknown field for kind pii")
	f("    window_size: 10\n", "window_size: unknown field for kind pii")

	// The regex never appears in an error.
	r := grLoad(grBase + gr("p", "pii", "    custom_patterns: [{name: t, regex: \"HUNTER2(\"}]\n"))
	if len(r.Errors) == 0 || strings.Contains(r.Err().Error(), "HUNTER2") {
		t.Fatalf("error echoes the pattern: %v", r.Err())
	}

	r = grMustLoad(t, grBase+gr("p", "pii", `    detectors: [email, {name: us_ssn, action: block}, {name: jwt}]
    custom_patterns:
      - {name: employee_id, regex: "EMP-\\d{6}"}
      - {name: ticket, regex: "TCK-(\\d+)", action: block, replacement: "TCK-***"}
    default_action: mask
    max_buffer_bytes: 1048576
`))
	g := r.Resources.Guardrails[0]
	p := g.Options.(*PIIOptions)
	wantDet := []PIIDetector{{"email", "mask", "[EMAIL_REDACTED]"}, {"us_ssn", "block", "[US_SSN_REDACTED]"}, {"jwt", "mask", "[JWT_REDACTED]"}}
	if len(p.Detectors) != 3 {
		t.Fatalf("detectors: %+v", p.Detectors)
	}
	for i := range wantDet {
		if p.Detectors[i] != wantDet[i] {
			t.Fatalf("detectors[%d]: got %+v; want %+v", i, p.Detectors[i], wantDet[i])
		}
	}
	cp := p.CustomPatterns
	if len(cp) != 2 || cp[0].Replacement != "[EMPLOYEE_ID_REDACTED]" || cp[0].Action != "mask" || !cp[0].Regexp.MatchString("EMP-123456") ||
		cp[1].Replacement != "TCK-***" || cp[1].Action != "block" {
		t.Fatalf("custom patterns: %+v", cp)
	}
	if g.Buffer.MaxBytes != 1048576 || g.Buffer.OnExceeded != OnBufferExceededFailClosed || g.Stream != nil {
		t.Fatalf("pii buffer: %+v", g.Buffer)
	}
	// Absent detectors: every built-in with default_action; [] runs none.
	r = grMustLoad(t, grBase+gr("p", "pii", "    default_action: block\n")+gr("q", "pii", "    detectors: []\n"))
	p = r.Resources.Guardrails[0].Options.(*PIIOptions)
	if len(p.Detectors) != len(PIIDetectorNames) || p.Detectors[8] != (PIIDetector{"private_key", "block", "[PRIVATE_KEY_REDACTED]"}) {
		t.Fatalf("default detectors: %+v", p.Detectors)
	}
	if q := r.Resources.Guardrails[1].Options.(*PIIOptions); len(q.Detectors) != 0 || q.DefaultAction != ActionMask {
		t.Fatalf("empty detectors: %+v", q)
	}
}

func TestGuardrailPresidio(t *testing.T) {
	f := func(body, want string) {
		t.Helper()
		grErrLine(t, grBase+gr("pr", "presidio", body), "guardrails[0] (name=pr): "+want)
	}
	f("    anonymizer_url: http://anonymizer:3000\n", "analyzer_url: required")
	f("    analyzer_url: http://analyzer:3000\n", "anonymizer_url: required")
	f("    analyzer_url: analyzer:3000\n    anonymizer_url: http://a\n", "analyzer_url: must be an absolute http or https URL (scheme http or https)")
	f("    analyzer_url: http://a\n    anonymizer_url: ftp://a\n", "anonymizer_url: must be an absolute http or https URL (scheme http or https)")
	f(presidioBody+"    operator: \"\"\n", "operator: must not be empty; omit it for the default, or use one of replace, mask, hash, redact")
	f(presidioBody+"    operator: encrypt\n", `operator: unknown value "encrypt"; allowed: replace, mask, hash, redact`)
	f(presidioBody+"    language: \"\"\n", "language: must not be empty; omit it for the default en")
	f(presidioBody+"    default_action: \"\"\n", "default_action: must not be empty; omit it for the default, or use one of mask, block")
	f(presidioBody+"    entities: [PERSON, {name: PHONE_NUMBER, action: \"\"}]\n", "entities[1].action: must not be empty; omit it for the default, or use one of mask, block")
	f(presidioBody+"    entities: [PERSON, PERSON]\n", `entities[1]: entity "PERSON" is already listed at entities[0]`)
	f(presidioBody+"    score_threshold: 2\n", "score_threshold: must be between 0 and 1")
	f(presidioBody+"    max_buffer_bytes: 0\n", "max_buffer_bytes: must be greater than 0 on kind presidio; omit it for the default 262144 (256 KiB)")
	f(presidioBody+"    max_buffer_bytes: -3\n", "max_buffer_bytes: must not be negative")
	f(presidioBody+"    api_key: x\n", "api_key: unknown field for kind presidio")

	r := grMustLoad(t, grBase+gr("pr", "presidio", presidioBody+`    entities: [PERSON, {name: CREDIT_CARD, action: block}]
    default_action: mask
    operator: hash
    language: de
    score_threshold: 0.6
`)+gr("pd", "presidio", presidioBody))
	p := r.Resources.Guardrails[0].Options.(*PresidioOptions)
	if p.AnalyzerURL != "http://analyzer:3000" || len(p.Entities) != 2 || p.Entities[0] != (PresidioEntity{"PERSON", "mask"}) ||
		p.Entities[1] != (PresidioEntity{"CREDIT_CARD", "block"}) || p.Operator != PresidioHash || p.Language != "de" || p.ScoreThreshold != 0.6 {
		t.Fatalf("presidio: %+v", p)
	}
	d := r.Resources.Guardrails[1].Options.(*PresidioOptions)
	if d.Operator != PresidioReplace || d.Language != "en" || d.DefaultAction != ActionMask || len(d.Entities) != 0 {
		t.Fatalf("presidio defaults: %+v", d)
	}
}

func TestGuardrailOpenAIModerationLakeraAzure(t *testing.T) {
	f := func(kind, body, want string) {
		t.Helper()
		grErrLine(t, grBase+gr("m", kind, body), "guardrails[0] (name=m): "+want)
	}
	f("openai_moderation", "", "api_key: required; supply it as ${VAR}")
	f("openai_moderation", "    api_key: \"\"\n", "api_key: must not be empty")
	f("openai_moderation", "    api_key: ${NOPE}\n", `api_key: environment variable "NOPE" is not set`)
	f("openai_moderation", oaiModBody+"    category_thresholds: {hate: 2}\n", "category_thresholds.hate: must be between 0 and 1")
	f("openai_moderation", oaiModBody+"    category_thresholds: {hate: high}\n", "category_thresholds.hate: must be a number, got a string")
	f("openai_moderation", oaiModBody+"    category_thresholds: {hate: ~}\n", "category_thresholds.hate: must be a number between 0 and 1")
	f("openai_moderation", oaiModBody+"    model: \"\"\n", "model: must not be empty")
	f("openai_moderation", oaiModBody+"    endpoint: api.openai.com\n", "endpoint: must be an absolute http or https URL (scheme http or https)")
	f("openai_moderation", oaiModBody+"    max_buffer_bytes: 10\n", "max_buffer_bytes: unknown field for kind openai_moderation")
	f("lakera", "", "api_key: required; supply it as ${VAR}")
	f("lakera", lakeraBody+"    project_id: \"\"\n", "project_id: must not be empty")
	f("lakera", lakeraBody+"    endpoint: \"\"\n", "endpoint: must not be empty")
	f("lakera", lakeraBody+"    max_buffer_bytes: -5\n", "max_buffer_bytes: must not be negative")
	f("lakera", lakeraBody+"    on_buffer_exceeded: fail_open\n", "on_buffer_exceeded: unknown field for kind lakera")
	f("azure_content_safety", "    api_key: ${AZURE_CS_KEY}\n", "endpoint: required")
	f("azure_content_safety", "    endpoint: https://x.example.com\n", "api_key: required; supply it as ${VAR}")
	f("azure_content_safety", azureBody+"    max_buffer_bytes: 10\n", "max_buffer_bytes: unknown field for kind azure_content_safety")
	f("azure_content_safety", azureBody+"    categories: [Hate]\n", "categories: unknown field for kind azure_content_safety")

	r := grMustLoad(t, grBase+gr("m", "openai_moderation", `    api_key: sk-literal-moderation
    model: text-moderation-stable
    category_thresholds: {hate: 0.4, "self-harm/intent": 0.2}
    endpoint: https://proxy.internal/v1/moderations
`)+gr("d", "openai_moderation", oaiModBody)+gr("l", "lakera", lakeraBody+"    project_id: project-1234\n    endpoint: https://api.lakera.ai/v2/guard\n"))
	m := r.Resources.Guardrails[0].Options.(*OpenAIModerationOptions)
	if m.APIKey.Reveal() != "sk-literal-moderation" || m.Model != "text-moderation-stable" || m.CategoryThresholds["self-harm/intent"] != 0.2 ||
		m.Endpoint != "https://proxy.internal/v1/moderations" {
		t.Fatalf("openai_moderation: %+v", m)
	}
	if !hasWarning(r, "guardrails[0] (name=m): api_key: credential written literally; supply it as ${VAR} so it stays out of the file") {
		t.Fatalf("no literal warning: %v", r.Warnings)
	}
	if d := r.Resources.Guardrails[1].Options.(*OpenAIModerationOptions); d.Model != DefaultOpenAIModerationModel || len(d.CategoryThresholds) != 0 || d.Endpoint != "" {
		t.Fatalf("openai_moderation defaults: %+v", d)
	}
	lk := r.Resources.Guardrails[2]
	if o := lk.Options.(*LakeraOptions); o.ProjectID != "project-1234" || o.APIKey.Reveal() != "lk-secret-value" || lk.Buffer.MaxBytes != 262144 || lk.Stream != nil {
		t.Fatalf("lakera: %+v %+v", o, lk.Buffer)
	}
}

func TestGuardrailAzureTextModeration(t *testing.T) {
	f := func(body, want string) {
		t.Helper()
		grErrLine(t, grBase+gr("az", "azure_content_safety_text_moderation", body), "guardrails[0] (name=az): "+want)
	}
	f("    api_key: ${AZURE_CS_KEY}\n", "endpoint: required")
	f(azureBody+"    categories: [Hate, Gore]\n", `categories[1]: unknown category "Gore"; allowed: Hate, Sexual, SelfHarm, Violence`)
	f(azureBody+"    categories: [Hate, Hate]\n", `categories[1]: category "Hate" is listed twice`)
	f(azureBody+"    categories: []\n", "categories: must list at least one category; omit it for all four")
	f(azureBody+"    severity_threshold: 8\n", "severity_threshold: must be between 0 and 7, got 8")
	f(azureBody+"    severity_threshold_by_category: {Spam: 3}\n", "severity_threshold_by_category.Spam: unknown category; allowed: Hate, Sexual, SelfHarm, Violence")
	f(azureBody+"    severity_threshold_by_category: {Hate: 9}\n", "severity_threshold_by_category.Hate: must be between 0 and 7, got 9")
	f(azureBody+"    output_type: TwoSeverityLevels\n", `output_type: unknown value "TwoSeverityLevels"; allowed: FourSeverityLevels, EightSeverityLevels`)
	f(azureBody+"    blocklist_names: [\"\"]\n", "blocklist_names[0]: must not be empty")
	f(azureBody+"    halt_on_blocklist_hit: \"true\"\n", "halt_on_blocklist_hit: must be a boolean, got a string")
	f(azureBody+"    text_source: concatenate\n", `text_source: unknown value "concatenate"; allowed: concatenate_user_content, concatenate_all_content`)
	f(azureBody+"    window_size: 4\n    window_overlap_size: 4\n", "window_overlap_size: must be less than window_size")
	f(azureBody+"    max_buffer_bytes: -1\n", "max_buffer_bytes: must not be negative")

	r := grMustLoad(t, grBase+gr("az", "azure_content_safety_text_moderation", azureBody+`    categories: [Hate, Violence]
    severity_threshold: 4
    severity_threshold_by_category: {Violence: 6, Sexual: 1}
    output_type: EightSeverityLevels
    blocklist_names: [competitors]
    halt_on_blocklist_hit: true
    text_source: concatenate_all_content
    stream_processing_mode: buffer_full
    max_buffer_bytes: 131072
    on_buffer_exceeded: fail_open
`)+gr("d", "azure_content_safety_text_moderation", azureBody))
	g := r.Resources.Guardrails[0]
	a := g.Options.(*AzureTextModerationOptions)
	if strings.Join(a.Categories, ",") != "Hate,Violence" || a.Threshold("Hate") != 4 || a.Threshold("Violence") != 6 ||
		a.OutputType != "EightSeverityLevels" || !a.HaltOnBlocklistHit || a.BlocklistNames[0] != "competitors" || a.TextSource != "concatenate_all_content" {
		t.Fatalf("azure text: %+v", a)
	}
	if g.Stream.Mode != StreamModeBufferFull || g.Buffer.MaxBytes != 131072 || g.Buffer.OnExceeded != OnBufferExceededFailOpen {
		t.Fatalf("azure text controls: %+v %+v", g.Stream, g.Buffer)
	}
	if !hasWarning(r, "guardrails[0] (name=az): severity_threshold_by_category.Sexual: category is not in categories; the threshold is unused") {
		t.Fatalf("warnings: %v", r.Warnings)
	}
	d := r.Resources.Guardrails[1].Options.(*AzureTextModerationOptions)
	if strings.Join(d.Categories, ",") != "Hate,Sexual,SelfHarm,Violence" || d.SeverityThreshold != 2 || d.OutputType != "FourSeverityLevels" ||
		d.TextSource != "concatenate_user_content" || d.HaltOnBlocklistHit {
		t.Fatalf("azure text defaults: %+v", d)
	}
}

func TestGuardrailAliyun(t *testing.T) {
	f := func(kind, body, want string) {
		t.Helper()
		grErrLine(t, grBase+gr("ali", kind, body), "guardrails[0] (name=ali): "+want)
	}
	for _, kind := range []string{"aliyun_text_moderation", "aliyun_ai_guardrail"} {
		f(kind, "    access_key_id: a\n    access_key_secret: ${ALIYUN_SECRET}\n", "region: required")
		f(kind, "    region: cn-shanghai\n    access_key_secret: ${ALIYUN_SECRET}\n", "access_key_id: required")
		f(kind, "    region: cn-shanghai\n    access_key_id: a\n", "access_key_secret: required; supply it as ${VAR}")
		f(kind, aliyunBody+"    endpoint: green-cip.cn-shanghai.aliyuncs.com\n", "endpoint: must be an absolute http or https URL (scheme http or https)")
		f(kind, aliyunBody+"    window_overlap_size: 1\n", "window_overlap_size: requires window_size")
		f(kind, aliyunBody+"    api_key: x\n", "api_key: unknown field for kind "+kind)
	}
	f("aliyun_text_moderation", aliyunBody+"    risk_level_threshold: none\n", `risk_level_threshold: unknown value "none"; allowed: low, medium, high`)
	f("aliyun_text_moderation", aliyunBody+"    service_level: pro\n", "service_level: unknown field for kind aliyun_text_moderation")
	f("aliyun_ai_guardrail", aliyunBody+"    service_level: premium\n", `service_level: unknown value "premium"; allowed: pro, basic`)
	f("aliyun_ai_guardrail", aliyunBody+"    risk_level_threshold: low\n", "risk_level_threshold: unknown field for kind aliyun_ai_guardrail")

	r := grMustLoad(t, grBase+gr("t", "aliyun_text_moderation", aliyunBody)+gr("a", "aliyun_ai_guardrail", aliyunBody+"    service_level: basic\n    endpoint: https://green-cip.cn-shanghai.aliyuncs.com\n    window_size: 200\n"))
	tm := r.Resources.Guardrails[0].Options.(*AliyunTextModerationOptions)
	if tm.RiskLevelThreshold != "high" || tm.Region != "cn-shanghai" || tm.AccessKeySecret.Reveal() != "ali-secret-value" || tm.AccessKeyID != "LTAI5tExample" {
		t.Fatalf("aliyun text: %+v", tm)
	}
	ag := r.Resources.Guardrails[1]
	if o := ag.Options.(*AliyunAIGuardrailOptions); o.ServiceLevel != "basic" || o.Endpoint == "" || ag.Stream.WindowSize != 200 {
		t.Fatalf("aliyun ai: %+v %+v", o, ag.Stream)
	}
	if d := r.Resources.Guardrails[0]; d.Stream.Mode != StreamModeWindow || d.Buffer.MaxBytes != 262144 {
		t.Fatalf("aliyun defaults: %+v %+v", d.Stream, d.Buffer)
	}
	r = grMustLoad(t, grBase+gr("a", "aliyun_ai_guardrail", aliyunBody))
	if o := r.Resources.Guardrails[0].Options.(*AliyunAIGuardrailOptions); o.ServiceLevel != "pro" {
		t.Fatalf("service_level default: %q", o.ServiceLevel)
	}
}

func TestGuardrailBedrock(t *testing.T) {
	f := func(body, want string) {
		t.Helper()
		grErrLine(t, grBase+gr("br", "bedrock", body), "guardrails[0] (name=br): "+want)
	}
	creds := "    aws_credentials: {kind: static, access_key_id: AKIA, secret_access_key: \"${AWS_SECRET}\"}\n"
	head := "    guardrail_id: gr-1\n    region: us-east-1\n"
	f(strings.Replace(bedrockBody, "    guardrail_id: gr-abc123\n", "", 1), "guardrail_id: required")
	f(strings.Replace(bedrockBody, "    region: us-east-1\n", "", 1), "region: required")
	f(strings.Replace(bedrockBody, "\"1\"", "1", 1), `guardrail_version: must be a string, not an integer; quote it: guardrail_version: "1"`)
	f(strings.Replace(bedrockBody, "\"1\"", "v1", 1), `guardrail_version: must be DRAFT or a version number such as "1"`)
	f(head+"    guardrail_version: DRAFT\n    latency_mode: {kind: serial}\n", "aws_credentials: required: {kind: static, access_key_id, secret_access_key}")
	f(head+"    guardrail_version: DRAFT\n"+creds, "latency_mode: required: {kind: serial} or {kind: timed, timeout_ms: 100 to 5000}")
	f(head+"    guardrail_version: DRAFT\n    latency_mode: {kind: serial}\n    aws_credentials: {kind: iam}\n", `aws_credentials.kind: unknown value "iam"; allowed: static`)
	f(head+"    guardrail_version: DRAFT\n    latency_mode: {kind: serial}\n    aws_credentials: {access_key_id: a, secret_access_key: \"${AWS_SECRET}\"}\n", "aws_credentials.kind: required; one of static")
	f(head+"    guardrail_version: DRAFT\n    latency_mode: {kind: serial}\n    aws_credentials: {kind: static, access_key_id: a}\n", "aws_credentials.secret_access_key: required; supply it as ${VAR}")
	f(head+"    guardrail_version: DRAFT\n    latency_mode: {kind: serial}\n    aws_credentials: {kind: static, secret_access_key: \"${AWS_SECRET}\"}\n", "aws_credentials.access_key_id: required")
	f(head+"    guardrail_version: DRAFT\n    latency_mode: {kind: serial}\n    aws_credentials: {kind: static, access_key_id: a, secret_access_key: \"${AWS_SECRET}\", session_token: t}\n", "aws_credentials.session_token: unknown field")
	f(head+"    guardrail_version: DRAFT\n"+creds+"    latency_mode: {kind: timed}\n", "latency_mode.timeout_ms: required with kind timed (100 to 5000)")
	f(head+"    guardrail_version: DRAFT\n"+creds+"    latency_mode: {kind: timed, timeout_ms: 50}\n", "latency_mode.timeout_ms: must be between 100 and 5000, got 50")
	f(head+"    guardrail_version: DRAFT\n"+creds+"    latency_mode: {kind: timed, timeout_ms: 5001}\n", "latency_mode.timeout_ms: must be between 100 and 5000, got 5001")
	f(head+"    guardrail_version: DRAFT\n"+creds+"    latency_mode: {kind: serial, timeout_ms: 500}\n", "latency_mode.timeout_ms: accepted only with kind timed")
	f(head+"    guardrail_version: DRAFT\n"+creds+"    latency_mode: {kind: async}\n", `latency_mode.kind: unknown value "async"; allowed: serial, timed`)
	f(bedrockBody+"    max_buffer_bytes: 100\n", "max_buffer_bytes: unknown field for kind bedrock")

	r := grMustLoad(t, grBase+gr("br", "bedrock", head+"    guardrail_version: DRAFT\n"+creds+"    latency_mode: {kind: timed, timeout_ms: 1200}\n    output_fail_open: true\n"))
	g := r.Resources.Guardrails[0]
	b := g.Options.(*BedrockGuardrailOptions)
	if b.GuardrailID != "gr-1" || b.GuardrailVersion != "DRAFT" || b.Region != "us-east-1" || b.Credentials.AccessKeyID != "AKIA" ||
		b.Credentials.SecretAccessKey.Reveal() != "aws-secret-value" || b.LatencyMode != BedrockLatencyTimed || b.LatencyTimeoutMS != 1200 {
		t.Fatalf("bedrock: %+v", b)
	}
	if g.TimeoutMS != 0 || !g.OutputFailOpen || g.Buffer != nil || g.Stream != nil {
		t.Fatalf("bedrock common: %+v", g)
	}
}

// TestGuardrailEveryKind loads one realistic guardrail of every kind.
func TestGuardrailEveryKind(t *testing.T) {
	r := grMustLoad(t, grBase+
		gr("kw", "keyword", "    patterns: [{kind: literal, value: PROJECT-ZEUS}, {kind: regex, value: \"(?i)internal[-_ ]only\"}]\n")+
		gr("sem", "semantic", semBody)+
		gr("js", "custom", customBody)+
		gr("pii", "pii", "    detectors: [email, {name: bank_card, action: block}]\n")+
		gr("pr", "presidio", presidioBody)+
		gr("oai", "openai_moderation", oaiModBody)+
		gr("lk", "lakera", lakeraBody)+
		gr("az", "azure_content_safety", azureBody)+
		gr("azt", "azure_content_safety_text_moderation", azureBody)+
		gr("alt", "aliyun_text_moderation", aliyunBody)+
		gr("ali", "aliyun_ai_guardrail", aliyunBody)+
		gr("br", "bedrock", bedrockBody))
	gs := r.Resources.Guardrails
	kinds := GuardrailKinds()
	if len(gs) != len(kinds) {
		t.Fatalf("got %d guardrails; want %d", len(gs), len(kinds))
	}
	seen := map[string]bool{}
	for _, g := range gs {
		if g.Options == nil || g.Options.GuardrailKind() != g.Kind {
			t.Fatalf("%s: options %T do not match kind %s", g.Name, g.Options, g.Kind)
		}
		seen[g.Kind] = true
	}
	for _, k := range kinds {
		if !seen[k] {
			t.Fatalf("kind %s not covered", k)
		}
	}
	if len(r.Warnings) != 0 {
		t.Fatalf("unexpected warnings: %v", r.Warnings)
	}
}

// TestGuardrailSecretsNeverEchoed checks that errors and warnings never hold a
// credential value, and that %v of a loaded guardrail redacts it.
func TestGuardrailSecretsNeverEchoed(t *testing.T) {
	const secret = "s3cr3t-literal-value"
	src := grBase + gr("lk", "lakera", "    api_key: "+secret+"\n    endpoint: \"https://user:"+secret+"@x\"\n    project_id: [x]\n")
	r := grLoad(src)
	all := r.Err().Error()
	for _, w := range r.Warnings {
		all += "\n" + w.String()
	}
	if len(r.Errors) == 0 || strings.Contains(all, secret) {
		t.Fatalf("secret echoed or no error:\n%s", all)
	}
	ok := grMustLoad(t, grBase+gr("lk", "lakera", "    api_key: "+secret+"\n"))
	o := ok.Resources.Guardrails[0].Options.(*LakeraOptions)
	if s := strings.Join([]string{o.APIKey.String(), o.APIKey.GoString()}, " "); strings.Contains(s, secret) {
		t.Fatalf("secret printed: %s", s)
	}
	for _, w := range ok.Warnings {
		if strings.Contains(w.String(), secret) {
			t.Fatalf("warning echoes secret: %s", w)
		}
	}
}

func TestBufferControlsRawCap(t *testing.T) {
	f := func(max, want int64) {
		t.Helper()
		b := BufferControls{MaxBytes: max}
		if got := b.RawCap(); got != want {
			t.Fatalf("RawCap(%d): got %d; want %d", max, got, want)
		}
	}
	f(262144, 262144*128)
	f(1<<62, 1<<63-1)
}
