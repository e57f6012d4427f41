package resources

import (
	"regexp"
	"regexp/syntax"
	"strconv"
	"strings"
	"unicode/utf8"

	yaml "go.yaml.in/yaml/v3"
)

// guardrailKinds is the kind table: decoder plus the common fields each kind
// rejects. Adding a kind is one row here and one decoder below.
var guardrailKinds = map[string]guardrailKind{
	GuardrailKeyword: {decode: decodeKeyword,
		noTimeout:        "not accepted on kind keyword (patterns are evaluated in process)",
		noOutputFailOpen: "not accepted on kind keyword; fail_open governs both input and output"},
	GuardrailSemantic: {decode: decodeSemanticGuardrail},
	GuardrailCustom:   {decode: decodeCustomScript},
	GuardrailPII: {decode: decodePII,
		noTimeout:        "not accepted on kind pii (detectors are evaluated in process)",
		noOutputFailOpen: "not accepted on kind pii; fail_open governs both input and output"},
	GuardrailPresidio:                         {decode: decodePresidio},
	GuardrailOpenAIModeration:                 {decode: decodeOpenAIModeration},
	GuardrailLakera:                           {decode: decodeLakera},
	GuardrailAzureContentSafety:               {decode: decodeAzureContentSafety},
	GuardrailAzureContentSafetyTextModeration: {decode: decodeAzureTextModeration},
	GuardrailAliyunTextModeration:             {decode: decodeAliyunTextModeration},
	GuardrailAliyunAIGuardrail:                {decode: decodeAliyunAIGuardrail},
	GuardrailBedrock: {decode: decodeBedrockGuardrail,
		noTimeout: "not accepted on kind bedrock; use latency_mode: {kind: timed, timeout_ms: ...}"},
}

// Interface guards.
var (
	_ GuardrailOptions = (*KeywordOptions)(nil)
	_ GuardrailOptions = (*SemanticGuardrailOptions)(nil)
	_ GuardrailOptions = (*CustomScriptOptions)(nil)
	_ GuardrailOptions = (*PIIOptions)(nil)
	_ GuardrailOptions = (*PresidioOptions)(nil)
	_ GuardrailOptions = (*OpenAIModerationOptions)(nil)
	_ GuardrailOptions = (*LakeraOptions)(nil)
	_ GuardrailOptions = (*AzureContentSafetyOptions)(nil)
	_ GuardrailOptions = (*AzureTextModerationOptions)(nil)
	_ GuardrailOptions = (*AliyunTextModerationOptions)(nil)
	_ GuardrailOptions = (*AliyunAIGuardrailOptions)(nil)
	_ GuardrailOptions = (*BedrockGuardrailOptions)(nil)
)

// regexMsg describes a compile error without the expression: a keyword or
// pattern can itself be sensitive (a leaked token someone wants blocked).
func regexMsg(err error) string {
	if se, ok := err.(*syntax.Error); ok {
		return "invalid regex: " + se.Code.String() + " (Go RE2 syntax; lookarounds and backreferences are not supported)"
	}
	return "invalid regex"
}

// --- keyword ---

// KeywordOptions are the options of kind keyword.
type KeywordOptions struct {
	Patterns []KeywordPattern // may be empty: matches nothing
}

// KeywordPattern is one patterns item.
type KeywordPattern struct {
	Kind   string         // "literal" or "regex"
	Value  string         // as written (after interpolation)
	Regexp *regexp.Regexp // compiled; regex patterns only
}

func (*KeywordOptions) GuardrailKind() string { return GuardrailKeyword }

func decodeKeyword(l *loader, g *Guardrail, o *obj) GuardrailOptions {
	k := &KeywordOptions{Patterns: []KeywordPattern{}}
	if !o.has("patterns") {
		o.raw("patterns")
		o.errf("patterns", "required; use [] for a guardrail that matches nothing")
		return k
	}
	items, _ := o.objs("patterns")
	for _, it := range items {
		if it == nil {
			continue
		}
		p := KeywordPattern{Kind: it.guardReqEnum("kind", "literal", "regex"), Value: it.reqStr("value")}
		if p.Kind == "regex" && p.Value != "" {
			re, err := regexp.Compile(p.Value)
			if err != nil {
				it.errf("value", regexMsg(err))
			} else {
				p.Regexp = re
				if re.MatchString("") {
					it.warnf("value", "regex matches the empty string, so it fires on every value")
				}
			}
		}
		it.finish()
		k.Patterns = append(k.Patterns, p)
	}
	return k
}

// --- semantic ---

// SemanticGuardrailOptions are the options of kind semantic.
type SemanticGuardrailOptions struct {
	EmbeddingModelName string
	EmbeddingModel     *Model // resolved: a direct model with an embedding block
	DenyExamples       []string
	DenyThreshold      float64 // set iff DenyExamples is non-empty
	AllowExamples      []string
	AllowThreshold     float64 // set iff AllowExamples is non-empty
	TextSource         string  // "user_messages" (default) or "all_messages"
	MaxScreenedTexts   int64   // default 8
}

func (*SemanticGuardrailOptions) GuardrailKind() string { return GuardrailSemantic }

// Active reports whether the guardrail has examples to compare against; with
// both lists empty it loads but inspects nothing.
func (s *SemanticGuardrailOptions) Active() bool {
	return len(s.DenyExamples) > 0 || len(s.AllowExamples) > 0
}

func decodeSemanticGuardrail(l *loader, g *Guardrail, o *obj) GuardrailOptions {
	s := &SemanticGuardrailOptions{TextSource: "user_messages", MaxScreenedTexts: DefaultSemanticMaxScreenedTexts}
	s.EmbeddingModelName = o.reqStr("embedding_model")
	examples := func(list, threshold string, dst *[]string, th *float64) {
		ex, _ := o.strList(list)
		for i, x := range ex {
			if strings.TrimSpace(x) == "" {
				o.d.errAt(o.e, indexPath(o.fieldPath(list), i), "must not be empty")
			}
		}
		*dst = ex
		hasTh := o.has(threshold)
		if v, ok := o.floatRange(threshold, 0, 1); ok {
			*th = v
		}
		switch {
		case len(ex) > 0 && !hasTh:
			o.errf(threshold, "required when "+list+" is non-empty (thresholds have no default)")
		case len(ex) == 0 && hasTh:
			o.warnf(threshold, "ignored while "+list+" is empty")
		}
	}
	examples("deny_examples", "deny_threshold", &s.DenyExamples, &s.DenyThreshold)
	examples("allow_examples", "allow_threshold", &s.AllowExamples, &s.AllowThreshold)
	if !s.Active() {
		o.warnf("", "deny_examples and allow_examples are both empty; the guardrail loads but inspects nothing")
	}
	if v, ok := o.enum("text_source", "user_messages", "all_messages"); ok {
		s.TextSource = v
	}
	if v, ok := o.intMin("max_screened_texts", 1); ok {
		s.MaxScreenedTexts = v
	}
	g.Buffer = decodeBufferControls(o, g.Kind, false, true)
	return s
}

// --- custom ---

// CustomScriptOptions are the options of kind custom.
type CustomScriptOptions struct {
	Script string // ES module source
	// Hooks the script names; a missing hook is skipped at run time.
	HasCheckInput, HasCheckOutput bool
	Secrets                       map[string]Secret // exposed to the script; empty map when absent
	MaxMemoryBytes                int64             // default 16777216
}

func (*CustomScriptOptions) GuardrailKind() string { return GuardrailCustom }

func decodeCustomScript(l *loader, g *Guardrail, o *obj) GuardrailOptions {
	c := &CustomScriptOptions{MaxMemoryBytes: DefaultCustomMaxMemoryBytes, Secrets: map[string]Secret{}}
	c.Script = o.reqStr("script")
	if strings.TrimSpace(c.Script) != "" {
		// A cheap sanity check until the JS engine compiles the module at load.
		c.HasCheckInput, c.HasCheckOutput = hasIdent(c.Script, "checkInput"), hasIdent(c.Script, "checkOutput")
		switch {
		case !hasIdent(c.Script, "export"):
			o.errf("script", "must be an ES module that exports checkInput, checkOutput or both (no export found)")
		case !c.HasCheckInput && !c.HasCheckOutput:
			o.errf("script", "must export checkInput, checkOutput or both")
		case g.HookPoint == HookPointInput && !c.HasCheckInput:
			o.warnf("script", "hook_point is input but the script has no checkInput; the guardrail inspects nothing")
		case g.HookPoint == HookPointOutput && !c.HasCheckOutput:
			o.warnf("script", "hook_point is output but the script has no checkOutput; the guardrail inspects nothing")
		}
	}
	if m := o.sub("secrets"); m != nil {
		for i, k := range m.keys {
			m.used[i] = true
			path := joinPath(m.path, k.Value)
			if strings.TrimSpace(k.Value) == "" {
				o.d.errAt(o.e, path, "secret names must not be empty")
				continue
			}
			c.Secrets[k.Value] = o.d.credentialAt(o.e, path, resolve(m.vals[i]))
		}
	}
	if v, ok := o.intMin("max_memory_bytes", 1); ok {
		c.MaxMemoryBytes = v
	}
	g.Stream = decodeStreamControls(o)
	g.Buffer = decodeBufferControls(o, g.Kind, false, true)
	return c
}

// hasIdent reports whether id occurs in src as a whole identifier.
func hasIdent(src, id string) bool {
	isIdent := func(c byte) bool {
		return c == '_' || c == '$' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
	}
	for off := 0; ; {
		i := strings.Index(src[off:], id)
		if i < 0 {
			return false
		}
		i += off
		end := i + len(id)
		if (i == 0 || !isIdent(src[i-1])) && (end == len(src) || !isIdent(src[end])) {
			return true
		}
		off = i + 1
	}
}

// --- shared: items written as a name or {name, action} ---

// PII and Presidio actions.
const (
	ActionMask  = "mask"
	ActionBlock = "block"
)

type namedAction struct {
	name, action string // action "" = inherit default_action
	path         string // path of the name, for errors
}

// guardNamedActions reads a sequence whose items are a string name or a
// mapping {name, action}. Invalid items are reported and left out.
func (o *obj) guardNamedActions(field string) []namedAction {
	items, _ := o.seq(field)
	out := make([]namedAction, 0, len(items))
	for i, it := range items {
		path := indexPath(o.fieldPath(field), i)
		if it.Kind == yaml.MappingNode {
			io := o.d.newObj(o.e, path, it)
			na := namedAction{name: io.reqStr("name"), action: io.guardEnum("action", ActionMask, ActionBlock), path: joinPath(path, "name")}
			io.finish()
			if na.name != "" {
				out = append(out, na)
			}
			continue
		}
		if it.Kind != yaml.ScalarNode || it.ShortTag() != "!!str" {
			o.d.errAt(o.e, path, "must be a name or a mapping {name, action}, got "+kindName(it))
			continue
		}
		s, _, ok := o.d.scalarString(o.e, path, it)
		if !ok {
			continue
		}
		if strings.TrimSpace(s) == "" {
			o.d.errAt(o.e, path, "must not be empty")
			continue
		}
		out = append(out, namedAction{name: s, path: path})
	}
	return out
}

// --- pii ---

// PIIDetectorNames lists the built-in pii detectors.
var PIIDetectorNames = []string{"email", "china_mobile", "china_id_card", "bank_card", "us_ssn", "ip_address", "api_key", "jwt", "private_key"}

// PIIOptions are the options of kind pii.
type PIIOptions struct {
	// Detectors in file order. When `detectors` is absent every built-in
	// detector runs with DefaultAction; `detectors: []` runs none.
	Detectors      []PIIDetector
	CustomPatterns []PIIPattern
	DefaultAction  string // ActionMask (default) or ActionBlock
}

// PIIDetector is one built-in detector with its resolved action.
type PIIDetector struct {
	Name        string
	Action      string // own action or DefaultAction
	Replacement string // "[<NAME>_REDACTED]"
}

// PIIPattern is one custom_patterns item.
type PIIPattern struct {
	Name   string
	Regexp *regexp.Regexp
	Action string // own action or DefaultAction
	// Replacement is used literally ($1 is not expanded); default "[<NAME>_REDACTED]".
	// With capture groups only group 1 is replaced.
	Replacement string
}

func (*PIIOptions) GuardrailKind() string { return GuardrailPII }

func redactionLabel(name string) string { return "[" + strings.ToUpper(name) + "_REDACTED]" }

func isPIIDetector(name string) bool {
	for _, d := range PIIDetectorNames {
		if d == name {
			return true
		}
	}
	return false
}

func decodePII(l *loader, g *Guardrail, o *obj) GuardrailOptions {
	p := &PIIOptions{DefaultAction: ActionMask}
	if v := o.guardEnum("default_action", ActionMask, ActionBlock); v != "" {
		p.DefaultAction = v
	}
	orDefault := func(a string) string {
		if a == "" {
			return p.DefaultAction
		}
		return a
	}
	if o.has("detectors") {
		p.Detectors = []PIIDetector{}
		seen := map[string]string{}
		for _, na := range o.guardNamedActions("detectors") {
			if !isPIIDetector(na.name) {
				o.d.errAt(o.e, na.path, "unknown detector \""+na.name+"\"; built-in detectors: "+strings.Join(PIIDetectorNames, ", ")+" (use custom_patterns for others)")
				continue
			}
			if prev, dup := seen[na.name]; dup {
				o.d.errAt(o.e, na.path, "detector \""+na.name+"\" is already listed at "+prev)
				continue
			}
			seen[na.name] = na.path
			p.Detectors = append(p.Detectors, PIIDetector{Name: na.name, Action: orDefault(na.action), Replacement: redactionLabel(na.name)})
		}
	} else {
		o.raw("detectors") // null: same as absent
		for _, n := range PIIDetectorNames {
			p.Detectors = append(p.Detectors, PIIDetector{Name: n, Action: p.DefaultAction, Replacement: redactionLabel(n)})
		}
	}
	items, _ := o.objs("custom_patterns")
	seen := map[string]int{}
	for i, it := range items {
		if it == nil {
			continue
		}
		cp := PIIPattern{Name: it.reqStr("name")}
		switch n := utf8.RuneCountInString(cp.Name); {
		case n > 64:
			it.errf("name", "must be at most 64 characters, got "+strconv.Itoa(n))
		case isPIIDetector(cp.Name):
			it.errf("name", "\""+cp.Name+"\" is a built-in detector name; choose another")
		case cp.Name != "":
			if prev, dup := seen[cp.Name]; dup {
				it.errf("name", "duplicate custom pattern name; also used by custom_patterns["+strconv.Itoa(prev)+"]")
			}
			seen[cp.Name] = i
		}
		if re := it.reqStr("regex"); re != "" {
			compiled, err := regexp.Compile(re)
			if err != nil {
				it.errf("regex", regexMsg(err))
			} else {
				cp.Regexp = compiled
				if compiled.MatchString("") {
					it.errf("regex", "matches the empty string; a pii pattern must match at least one character")
				}
			}
		}
		cp.Action = orDefault(it.guardEnum("action", ActionMask, ActionBlock))
		cp.Replacement = redactionLabel(cp.Name)
		if v, ok := it.str("replacement"); ok {
			cp.Replacement = v
		}
		it.finish()
		p.CustomPatterns = append(p.CustomPatterns, cp)
	}
	g.Buffer = decodeBufferControls(o, g.Kind, true, false)
	return p
}

// --- presidio ---

// Presidio anonymizer operators.
const (
	PresidioReplace = "replace"
	PresidioMask    = "mask"
	PresidioHash    = "hash"
	PresidioRedact  = "redact"
)

// PresidioOptions are the options of kind presidio.
type PresidioOptions struct {
	AnalyzerURL   string
	AnonymizerURL string
	// Entities restricts the analyzer to these entity types; empty means
	// every entity the analyzer supports, each with DefaultAction.
	Entities       []PresidioEntity
	DefaultAction  string  // ActionMask (default) or ActionBlock
	Operator       string  // PresidioReplace (default), PresidioMask, PresidioHash or PresidioRedact
	Language       string  // default "en"
	ScoreThreshold float64 // 0 to 1; default 0 (the analyzer's own default)
}

// PresidioEntity is one entities item with its resolved action.
type PresidioEntity struct {
	Name   string
	Action string
}

func (*PresidioOptions) GuardrailKind() string { return GuardrailPresidio }

func decodePresidio(l *loader, g *Guardrail, o *obj) GuardrailOptions {
	p := &PresidioOptions{DefaultAction: ActionMask, Operator: PresidioReplace, Language: "en"}
	p.AnalyzerURL = o.guardURL("analyzer_url", true)
	p.AnonymizerURL = o.guardURL("anonymizer_url", true)
	if v := o.guardEnum("default_action", ActionMask, ActionBlock); v != "" {
		p.DefaultAction = v
	}
	seen := map[string]string{}
	for _, na := range o.guardNamedActions("entities") {
		if prev, dup := seen[na.name]; dup {
			o.d.errAt(o.e, na.path, "entity \""+na.name+"\" is already listed at "+prev)
			continue
		}
		seen[na.name] = na.path
		if na.action == "" {
			na.action = p.DefaultAction
		}
		p.Entities = append(p.Entities, PresidioEntity{Name: na.name, Action: na.action})
	}
	if v := o.guardEnum("operator", PresidioReplace, PresidioMask, PresidioHash, PresidioRedact); v != "" {
		p.Operator = v
	}
	if n := o.raw("language"); n != nil {
		if s, _, ok := o.d.scalarString(o.e, o.fieldPath("language"), n); ok {
			if strings.TrimSpace(s) == "" {
				o.errf("language", "must not be empty; omit it for the default en")
			} else {
				p.Language = s
			}
		}
	}
	p.ScoreThreshold, _ = o.floatRange("score_threshold", 0, 1)
	g.Buffer = decodeBufferControls(o, g.Kind, true, false)
	return p
}

// --- openai_moderation ---

// DefaultOpenAIModerationModel is openai_moderation's model when unset.
const DefaultOpenAIModerationModel = "omni-moderation-latest"

// OpenAIModerationOptions are the options of kind openai_moderation. Detection
// only: it never rewrites content.
type OpenAIModerationOptions struct {
	APIKey Secret
	Model  string
	// CategoryThresholds maps a category to the score (0 to 1) at which it
	// blocks. Empty: the provider's own flagged verdict decides.
	CategoryThresholds map[string]float64
	Endpoint           string // "" = the provider's public endpoint
}

func (*OpenAIModerationOptions) GuardrailKind() string { return GuardrailOpenAIModeration }

func decodeOpenAIModeration(l *loader, g *Guardrail, o *obj) GuardrailOptions {
	m := &OpenAIModerationOptions{Model: DefaultOpenAIModerationModel, CategoryThresholds: map[string]float64{}}
	m.APIKey = o.guardCredential("api_key")
	if o.has("model") {
		m.Model = o.reqStr("model")
	} else {
		o.raw("model")
	}
	if ct := o.sub("category_thresholds"); ct != nil {
		for _, k := range ct.keyNames() {
			if v, ok := ct.floatRange(k, 0, 1); ok {
				m.CategoryThresholds[k] = v
			} else if !ct.has(k) {
				ct.errf(k, "must be a number between 0 and 1")
			}
		}
		ct.finish()
	}
	m.Endpoint = o.guardURL("endpoint", false)
	return m
}

// --- lakera ---

// LakeraOptions are the options of kind lakera.
type LakeraOptions struct {
	APIKey    Secret
	ProjectID string // "" = the account's default project
	Endpoint  string // "" = the provider's public endpoint
}

func (*LakeraOptions) GuardrailKind() string { return GuardrailLakera }

func decodeLakera(l *loader, g *Guardrail, o *obj) GuardrailOptions {
	k := &LakeraOptions{APIKey: o.guardCredential("api_key")}
	if o.has("project_id") {
		k.ProjectID = o.reqStr("project_id")
	} else {
		o.raw("project_id")
	}
	k.Endpoint = o.guardURL("endpoint", false)
	g.Buffer = decodeBufferControls(o, g.Kind, false, false)
	return k
}

// --- azure_content_safety (prompt shield) ---

// AzureContentSafetyOptions are the options of kind azure_content_safety.
type AzureContentSafetyOptions struct {
	Endpoint string
	APIKey   Secret
}

func (*AzureContentSafetyOptions) GuardrailKind() string { return GuardrailAzureContentSafety }

func decodeAzureContentSafety(l *loader, g *Guardrail, o *obj) GuardrailOptions {
	return &AzureContentSafetyOptions{Endpoint: o.guardURL("endpoint", true), APIKey: o.guardCredential("api_key")}
}

// --- azure_content_safety_text_moderation ---

// AzureTextCategories are the harm categories of Azure text moderation.
var AzureTextCategories = []string{"Hate", "Sexual", "SelfHarm", "Violence"}

// AzureTextModerationOptions are the options of kind azure_content_safety_text_moderation.
type AzureTextModerationOptions struct {
	Endpoint   string
	APIKey     Secret
	Categories []string // default all four AzureTextCategories
	// SeverityThreshold: a category at or above it blocks. Default 2, 0 to 7.
	SeverityThreshold           int64
	SeverityThresholdByCategory map[string]int64 // overrides per category
	OutputType                  string           // "FourSeverityLevels" (default) or "EightSeverityLevels"
	BlocklistNames              []string
	HaltOnBlocklistHit          bool
	TextSource                  string // "concatenate_user_content" (default) or "concatenate_all_content"; input hook only
}

func (*AzureTextModerationOptions) GuardrailKind() string {
	return GuardrailAzureContentSafetyTextModeration
}

// Threshold returns the severity at which category blocks.
func (a *AzureTextModerationOptions) Threshold(category string) int64 {
	if v, ok := a.SeverityThresholdByCategory[category]; ok {
		return v
	}
	return a.SeverityThreshold
}

func isAzureCategory(c string) bool {
	for _, a := range AzureTextCategories {
		if a == c {
			return true
		}
	}
	return false
}

func decodeAzureTextModeration(l *loader, g *Guardrail, o *obj) GuardrailOptions {
	a := &AzureTextModerationOptions{
		SeverityThreshold: 2, OutputType: "FourSeverityLevels", TextSource: "concatenate_user_content",
		Categories: AzureTextCategories, SeverityThresholdByCategory: map[string]int64{},
	}
	a.Endpoint = o.guardURL("endpoint", true)
	a.APIKey = o.guardCredential("api_key")
	if cats, ok := o.strList("categories"); ok {
		a.Categories = make([]string, 0, len(cats))
		seen := map[string]bool{}
		for i, c := range cats {
			path := indexPath(o.fieldPath("categories"), i)
			switch {
			case !isAzureCategory(c):
				o.d.errAt(o.e, path, "unknown category \""+c+"\"; allowed: "+strings.Join(AzureTextCategories, ", "))
			case seen[c]:
				o.d.errAt(o.e, path, "category \""+c+"\" is listed twice")
			default:
				seen[c] = true
				a.Categories = append(a.Categories, c)
			}
		}
		if len(cats) == 0 {
			o.errf("categories", "must list at least one category; omit it for all four")
		}
	}
	if v, ok := o.intRange("severity_threshold", 0, 7); ok {
		a.SeverityThreshold = v
	}
	if m := o.sub("severity_threshold_by_category"); m != nil {
		for _, c := range m.keyNames() {
			if !isAzureCategory(c) {
				m.raw(c)
				m.errf(c, "unknown category; allowed: "+strings.Join(AzureTextCategories, ", "))
				continue
			}
			if !m.has(c) {
				m.raw(c)
				m.errf(c, "must be an integer between 0 and 7")
				continue
			}
			if v, ok := m.intRange(c, 0, 7); ok {
				a.SeverityThresholdByCategory[c] = v
			}
			enabled := false
			for _, x := range a.Categories {
				enabled = enabled || x == c
			}
			if !enabled {
				m.warnf(c, "category is not in categories; the threshold is unused")
			}
		}
		m.finish()
	}
	if v, ok := o.enum("output_type", "FourSeverityLevels", "EightSeverityLevels"); ok {
		a.OutputType = v
	}
	if names, ok := o.strList("blocklist_names"); ok {
		for i, n := range names {
			if strings.TrimSpace(n) == "" {
				o.d.errAt(o.e, indexPath(o.fieldPath("blocklist_names"), i), "must not be empty")
			}
		}
		a.BlocklistNames = names
	}
	a.HaltOnBlocklistHit = o.boolDefault("halt_on_blocklist_hit", false)
	if v, ok := o.enum("text_source", "concatenate_user_content", "concatenate_all_content"); ok {
		a.TextSource = v
	}
	g.Stream = decodeStreamControls(o)
	g.Buffer = decodeBufferControls(o, g.Kind, false, true)
	return a
}

// --- Aliyun kinds ---

// AliyunCredentials are the shared connection fields of the Aliyun kinds.
type AliyunCredentials struct {
	Region          string
	AccessKeyID     string
	AccessKeySecret Secret
	Endpoint        string // "" = the regional public endpoint
}

func decodeAliyunCredentials(o *obj) AliyunCredentials {
	return AliyunCredentials{
		Region:          o.reqStr("region"),
		AccessKeyID:     o.reqStr("access_key_id"),
		AccessKeySecret: o.guardCredential("access_key_secret"),
		Endpoint:        o.guardURL("endpoint", false),
	}
}

// AliyunTextModerationOptions are the options of kind aliyun_text_moderation.
type AliyunTextModerationOptions struct {
	AliyunCredentials
	RiskLevelThreshold string // "low", "medium" or "high" (default)
}

func (*AliyunTextModerationOptions) GuardrailKind() string { return GuardrailAliyunTextModeration }

func decodeAliyunTextModeration(l *loader, g *Guardrail, o *obj) GuardrailOptions {
	a := &AliyunTextModerationOptions{AliyunCredentials: decodeAliyunCredentials(o), RiskLevelThreshold: "high"}
	if v, ok := o.enum("risk_level_threshold", "low", "medium", "high"); ok {
		a.RiskLevelThreshold = v
	}
	g.Stream = decodeStreamControls(o)
	g.Buffer = decodeBufferControls(o, g.Kind, false, true)
	return a
}

// AliyunAIGuardrailOptions are the options of kind aliyun_ai_guardrail.
type AliyunAIGuardrailOptions struct {
	AliyunCredentials
	ServiceLevel string // "pro" (default) or "basic"; must be activated with the provider
}

func (*AliyunAIGuardrailOptions) GuardrailKind() string { return GuardrailAliyunAIGuardrail }

func decodeAliyunAIGuardrail(l *loader, g *Guardrail, o *obj) GuardrailOptions {
	a := &AliyunAIGuardrailOptions{AliyunCredentials: decodeAliyunCredentials(o), ServiceLevel: "pro"}
	if v, ok := o.enum("service_level", "pro", "basic"); ok {
		a.ServiceLevel = v
	}
	g.Stream = decodeStreamControls(o)
	g.Buffer = decodeBufferControls(o, g.Kind, false, true)
	return a
}

// --- bedrock ---

// Bedrock latency modes.
const (
	BedrockLatencySerial = "serial"
	BedrockLatencyTimed  = "timed"
)

// BedrockGuardrailOptions are the options of kind bedrock.
type BedrockGuardrailOptions struct {
	GuardrailID      string
	GuardrailVersion string // "DRAFT" or a version number, as a string
	Region           string
	Credentials      AWSStaticCredentials
	LatencyMode      string // BedrockLatencySerial or BedrockLatencyTimed
	LatencyTimeoutMS int64  // timed only: 100 to 5000
}

// AWSStaticCredentials is aws_credentials with kind static.
type AWSStaticCredentials struct {
	AccessKeyID     string
	SecretAccessKey Secret
}

func (*BedrockGuardrailOptions) GuardrailKind() string { return GuardrailBedrock }

var bedrockVersionRE = lazyRE(`^(DRAFT|[1-9][0-9]{0,7})$`)

func decodeBedrockGuardrail(l *loader, g *Guardrail, o *obj) GuardrailOptions {
	b := &BedrockGuardrailOptions{}
	b.GuardrailID = o.reqStr("guardrail_id")
	if n := o.raw("guardrail_version"); n != nil && n.Kind == yaml.ScalarNode && n.ShortTag() == "!!int" {
		o.errf("guardrail_version", "must be a string, not an integer; quote it: guardrail_version: \""+n.Value+"\"")
	} else if v := o.reqStr("guardrail_version"); v != "" && !bedrockVersionRE().MatchString(v) {
		o.errf("guardrail_version", "must be DRAFT or a version number such as \"1\"")
	} else {
		b.GuardrailVersion = v
	}
	b.Region = o.reqStr("region")

	if !o.has("aws_credentials") {
		o.raw("aws_credentials")
		o.errf("aws_credentials", "required: {kind: static, access_key_id, secret_access_key}")
	} else if c := o.sub("aws_credentials"); c != nil {
		c.guardReqEnum("kind", "static")
		b.Credentials.AccessKeyID = c.reqStr("access_key_id")
		b.Credentials.SecretAccessKey = c.guardCredential("secret_access_key")
		c.finish()
	}

	if !o.has("latency_mode") {
		o.raw("latency_mode")
		o.errf("latency_mode", "required: {kind: serial} or {kind: timed, timeout_ms: 100 to 5000}")
	} else if lm := o.sub("latency_mode"); lm != nil {
		b.LatencyMode = lm.guardReqEnum("kind", BedrockLatencySerial, BedrockLatencyTimed)
		switch b.LatencyMode {
		case BedrockLatencyTimed:
			if !lm.has("timeout_ms") {
				lm.raw("timeout_ms")
				lm.errf("timeout_ms", "required with kind timed (100 to 5000)")
			}
			b.LatencyTimeoutMS, _ = lm.intRange("timeout_ms", 100, 5000)
		case BedrockLatencySerial:
			lm.reject("timeout_ms", "accepted only with kind timed")
		default:
			lm.raw("timeout_ms") // the kind error is the one worth reading
		}
		lm.finish()
	}
	return b
}
