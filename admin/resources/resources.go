// Package resources implements the resource-file load pipeline:
//
//	read file → parse YAML (one document) → interpolate ${VAR} in string scalars →
//	decode into typed entries (unknown fields rejected at every level) →
//	identity and uniqueness → name references → cross-reference checks
//
// Every stage appends to one error list; the file is rejected when the list is
// non-empty. Interpolation happens as each string scalar is decoded, after YAML
// parsing, so values can never inject YAML structure.
package resources

import (
	"os"
	"sort"
	"strconv"
	"strings"

	yaml "go.yaml.in/yaml/v3"
)

// FormatVersion is the only supported _format_version.
const FormatVersion = "1"

// Collection names, in the order the spec lists them.
const (
	CollProviderKeys           = "provider_keys"
	CollModels                 = "models"
	CollAPIKeys                = "api_keys"
	CollOIDCProviders          = "oidc_providers"
	CollMCPAuthSettings        = "mcp_auth_settings"
	CollClaimMappings          = "claim_mappings"
	CollGuardrails             = "guardrails"
	CollGuardrailAttachments   = "guardrail_attachments"
	CollMCPServers             = "mcp_servers"
	CollA2AAgents              = "a2a_agents"
	CollPassthroughRoutes      = "passthrough_routes"
	CollCachePolicies          = "cache_policies"
	CollObservabilityExporters = "observability_exporters"
	CollRateLimitPolicies      = "rate_limit_policies"
)

// Collections lists the fourteen collection names in spec order.
var Collections = []string{
	CollProviderKeys, CollModels, CollAPIKeys, CollOIDCProviders, CollMCPAuthSettings,
	CollClaimMappings, CollGuardrails, CollGuardrailAttachments, CollMCPServers,
	CollA2AAgents, CollPassthroughRoutes, CollCachePolicies, CollObservabilityExporters,
	CollRateLimitPolicies,
}

// Resources is a fully validated resource file. It is immutable once Load returns.
type Resources struct {
	ProviderKeys           []*ProviderKey
	Models                 []*Model
	APIKeys                []*APIKey
	OIDCProviders          []*OIDCProvider
	MCPAuthSettings        *MCPAuthSettings // nil when absent
	ClaimMappings          []*ClaimMapping
	Guardrails             []*Guardrail
	GuardrailAttachments   []*GuardrailAttachment
	MCPServers             []*MCPServer
	A2AAgents              []*A2AAgent
	PassthroughRoutes      []*PassthroughRoute
	CachePolicies          []*CachePolicy
	ObservabilityExporters []*ObservabilityExporter
	RateLimitPolicies      []*RateLimitPolicy

	// UnknownKinds lists guardrail entries whose kind this build does not know.
	// They are skipped, not errors.
	UnknownKinds []UnknownKind

	// Fields lists every non-null field written in the file's entries, in
	// file order (snapshot uses it to list configuration without runtime
	// effect).
	Fields []FieldUse
}

// UnknownKind is an entry skipped because its kind is unknown to this build.
type UnknownKind struct {
	Collection string `json:"collection"`
	Index      int    `json:"index"`
	Name       string `json:"name"`
	Kind       string `json:"kind"`
}

// Counts returns the number of entries per collection, in spec order.
func (r *Resources) Counts() []CollectionCount {
	n := func(c int) int { return c }
	mas := 0
	if r.MCPAuthSettings != nil {
		mas = 1
	}
	return []CollectionCount{
		{CollProviderKeys, n(len(r.ProviderKeys))},
		{CollModels, len(r.Models)},
		{CollAPIKeys, len(r.APIKeys)},
		{CollOIDCProviders, len(r.OIDCProviders)},
		{CollMCPAuthSettings, mas},
		{CollClaimMappings, len(r.ClaimMappings)},
		{CollGuardrails, len(r.Guardrails)},
		{CollGuardrailAttachments, len(r.GuardrailAttachments)},
		{CollMCPServers, len(r.MCPServers)},
		{CollA2AAgents, len(r.A2AAgents)},
		{CollPassthroughRoutes, len(r.PassthroughRoutes)},
		{CollCachePolicies, len(r.CachePolicies)},
		{CollObservabilityExporters, len(r.ObservabilityExporters)},
		{CollRateLimitPolicies, len(r.RateLimitPolicies)},
	}
}

// CollectionCount is one row of Counts.
type CollectionCount struct {
	Collection string
	Count      int
}

// EntryID is one entry's derived ID, for `gw validate --ids`.
type EntryID struct {
	Collection string
	Identity   string
	ID         string
}

// Result is the outcome of one load.
type Result struct {
	File      string     // the resource file (LoadFile); "" for Load
	Resources *Resources // nil when Errors is non-empty
	Errors    []Error
	Warnings  []Error
	IDs       []EntryID
}

// Err returns the aggregated load error or nil.
func (r *Result) Err() error {
	if len(r.Errors) == 0 {
		return nil
	}
	return &LoadError{File: r.File, Errors: r.Errors}
}

// OSEnv reads the process environment.
func OSEnv(name string) (string, bool) { return os.LookupEnv(name) }

// LoadFile reads path and runs the load pipeline.
func LoadFile(path string, env Env) *Result {
	data, err := os.ReadFile(path)
	if err != nil {
		return &Result{File: path, Errors: []Error{{Index: -1, Msg: "cannot read resources file: " + err.Error()}}}
	}
	r := Load(data, env)
	r.File = path
	return r
}

// Load runs the whole pipeline on data.
func Load(data []byte, env Env) *Result {
	if env == nil {
		env = OSEnv
	}
	used := map[string]string{} // interpolated value → variable name, for scrubbing
	recording := func(name string) (string, bool) {
		v, ok := env(name)
		// Values shorter than scrubMinLen are not scrubbed: they cannot be
		// secrets worth the name, and replacing them would garble messages.
		if ok && len(v) >= scrubMinLen {
			used[v] = name
		}
		return v, ok
	}
	l := &loader{d: &decoder{env: recording}, res: &Resources{}}
	root, err := parseDocument(data)
	if err != nil {
		return &Result{Errors: []Error{{Index: -1, Msg: err.Error(), Line: yamlErrorLine(err.Error())}}}
	}
	l.top(root)
	// Identity and reference checks run even after decode errors so that one
	// run reports every problem in the file. Entries that failed to decode
	// are still present (partially filled), so references to them resolve.
	l.checkIdentities()
	l.resolveReferences()
	for _, list := range [2][]Error{l.d.errs, l.d.warnings} {
		for i := range list {
			locate(root, &list[i])
		}
	}
	out := &Result{Errors: scrub(l.d.errs, used), Warnings: scrub(l.d.warnings, used)}
	if len(out.Errors) == 0 {
		out.Resources = l.res
		out.IDs = l.ids()
		l.res.Fields = make([]FieldUse, len(l.d.fields))
		for i, f := range l.d.fields {
			l.res.Fields[i] = FieldUse{Collection: f.e.coll, Index: f.e.idx, IDField: f.e.idField, ID: f.e.id, Path: NormalizePath(f.path)}
		}
	}
	return out
}

// loader holds one pipeline run.
type loader struct {
	d   *decoder
	res *Resources
}

type collectionDecoder func(l *loader, e *entry, o *obj)

// collectionTable maps each collection to its entry decoder. Built once.
var collectionTable map[string]collectionDecoder

func init() {
	collectionTable = map[string]collectionDecoder{
		CollProviderKeys:           (*loader).decodeProviderKey,
		CollModels:                 (*loader).decodeModel,
		CollAPIKeys:                (*loader).decodeAPIKey,
		CollOIDCProviders:          (*loader).decodeOIDCProvider,
		CollMCPAuthSettings:        (*loader).decodeMCPAuthSettings,
		CollClaimMappings:          (*loader).decodeClaimMapping,
		CollGuardrails:             (*loader).decodeGuardrail,
		CollGuardrailAttachments:   (*loader).decodeGuardrailAttachment,
		CollMCPServers:             (*loader).decodeMCPServer,
		CollA2AAgents:              (*loader).decodeA2AAgent,
		CollPassthroughRoutes:      (*loader).decodePassthroughRoute,
		CollCachePolicies:          (*loader).decodeCachePolicy,
		CollObservabilityExporters: (*loader).decodeObservabilityExporter,
		CollRateLimitPolicies:      (*loader).decodeRateLimitPolicy,
	}
}

func (l *loader) top(root *yaml.Node) {
	d := l.d
	root = resolve(root)
	if root == nil || root.Kind != yaml.MappingNode {
		d.errAt(nil, "", "top level must be a mapping, got "+kindName(root))
		return
	}
	o := d.newObj(nil, "", root)
	if o == nil {
		return
	}
	l.formatVersion(o)
	// Decode collections in spec order so errors come out in a stable order.
	for _, name := range Collections {
		n := o.raw(name)
		if n == nil {
			continue // absent or null: empty
		}
		if n.Kind != yaml.SequenceNode {
			d.errAt(nil, name, "must be a sequence of mappings, got "+kindName(n))
			continue
		}
		dec := collectionTable[name]
		for i, item := range n.Content {
			e := &entry{coll: name, idx: i}
			l.peekIdentity(e, item)
			eo := d.newObj(e, "", item)
			if eo == nil {
				continue
			}
			dec(l, e, eo)
			eo.finish()
		}
	}
	for i, k := range o.keys {
		if o.used[i] || k.Value == "_format_version" {
			continue
		}
		if k.ShortTag() == "!!merge" {
			d.errAt(nil, "<<", "unknown collection (YAML merge keys are not expanded)")
			continue
		}
		msg := "unknown collection"
		if s := suggest(k.Value, append([]string{"_format_version"}, Collections...)); s != "" {
			msg += "; did you mean `" + s + "`?"
		}
		d.errAt(nil, k.Value, msg+"; known: _format_version, "+joinComma(Collections))
	}
}

func (l *loader) formatVersion(o *obj) {
	d := l.d
	if !o.present("_format_version") {
		d.errAt(nil, "_format_version", "required; add _format_version: \"1\" at the top of the file")
		return
	}
	n := o.raw("_format_version")
	switch {
	case n == nil:
		d.errAt(nil, "_format_version", "required; set it to \"1\"")
	case n.Kind == yaml.ScalarNode && n.ShortTag() == "!!int" && n.Value == "1":
		d.errAt(nil, "_format_version", "must be the string \"1\", not the integer 1; quote it: _format_version: \"1\"")
	case n.Kind == yaml.ScalarNode && n.ShortTag() == "!!str":
		if n.Value != FormatVersion {
			d.errAt(nil, "_format_version", "unsupported version \""+n.Value+"\"; supported: \"1\"")
		}
	default:
		d.errAt(nil, "_format_version", "must be the string \"1\", got "+kindName(n))
	}
}

func joinComma(s []string) string {
	out := ""
	for i, v := range s {
		if i > 0 {
			out += ", "
		}
		out += v
	}
	return out
}

// identityRef is one entry's identity, for uniqueness checks and name lookups.
type identityRef struct {
	idx int
	id  string
}

// checkUnique reports duplicate identities; the error names both entries.
func (l *loader) checkUnique(coll, idField string, refs []identityRef) {
	first := make(map[string]int, len(refs))
	for _, r := range refs {
		if r.id == "" {
			continue // already reported as missing
		}
		if prev, dup := first[r.id]; dup {
			l.d.errAt(&entry{coll: coll, idx: r.idx, idField: idField, id: r.id}, idField,
				"duplicate identity; also used by "+coll+"["+strconv.Itoa(prev)+"]")
			continue
		}
		first[r.id] = r.idx
	}
}

// names returns the sorted identities of a collection, for "available:" hints.
func names[T any](items []T, id func(T) string) []string {
	out := make([]string, 0, len(items))
	for _, it := range items {
		out = append(out, id(it))
	}
	sort.Strings(out)
	return out
}

// identityFields lists the identity field(s) of each collection.
var identityFields = map[string][]string{
	CollProviderKeys: {"display_name"}, CollModels: {"display_name"}, CollAPIKeys: {"display_name"},
	CollOIDCProviders: {"name"}, CollClaimMappings: {"name"}, CollGuardrails: {"name"},
	CollMCPServers: {"name", "display_name"}, CollA2AAgents: {"name", "display_name"},
	CollPassthroughRoutes: {"name", "display_name"}, CollCachePolicies: {"name"},
	CollObservabilityExporters: {"name"}, CollRateLimitPolicies: {"name"},
}

// peekIdentity sets the entry's identity before decoding so that errors found
// while opening the mapping (duplicate keys) already name the entry.
func (l *loader) peekIdentity(e *entry, n *yaml.Node) {
	n = resolve(n)
	if n == nil || n.Kind != yaml.MappingNode {
		return
	}
	for _, f := range identityFields[e.coll] {
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := resolve(n.Content[i]), resolve(n.Content[i+1])
			if k.Value != f || v.Kind != yaml.ScalarNode || v.ShortTag() != "!!str" {
				continue
			}
			if s, _, err := Interpolate(v.Value, l.d.env); err == nil && s != "" {
				e.setID(f, s)
				return
			}
		}
	}
}

const scrubMinLen = 6

// scrub replaces every interpolated value that reached an error text (an
// identity or a name built from ${VAR}) with the variable reference, so that
// error and warning lines never contain a variable's value.
func scrub(errs []Error, used map[string]string) []Error {
	if len(used) == 0 || len(errs) == 0 {
		return errs
	}
	vals := make([]string, 0, len(used))
	for v := range used {
		vals = append(vals, v)
	}
	// Longest first, so a value containing another is replaced whole.
	sort.Slice(vals, func(i, j int) bool { return len(vals[i]) > len(vals[j]) })
	pairs := make([]string, 0, 2*len(vals))
	for _, v := range vals {
		pairs = append(pairs, v, "${"+used[v]+"}")
	}
	r := strings.NewReplacer(pairs...)
	for i := range errs {
		e := &errs[i]
		e.ID, e.Path, e.Msg = r.Replace(e.ID), r.Replace(e.Path), r.Replace(e.Msg)
	}
	return errs
}
