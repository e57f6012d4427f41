package snapshot

import (
	"sort"
	"strings"

	"gw/adapters/vertex"
	"gw/admin/resources"
)

// Unenforced is one loaded entry or field that has no runtime effect in
// this build. Nothing configured is silently ignored: every such item is
// warned about at startup and on reload, printed by `gw validate`, listed
// in /status/config and counted by gw_config_unenforced_resources.
type Unenforced struct {
	Collection string `json:"collection"`
	// Entry names the entry by its identity ("display_name=gpt"); empty
	// for startup settings.
	Entry string `json:"entry,omitempty"`
	// Field is the dotted field path (list indexes dropped); empty when the
	// whole entry has no effect.
	Field string `json:"field,omitempty"`
	// Missing says what this build lacks.
	Missing string `json:"missing"`
}

// String renders the item for a log or `gw validate` line.
func (u Unenforced) String() string {
	var b strings.Builder
	b.WriteString(u.Collection)
	if u.Entry != "" {
		b.WriteString(" (" + u.Entry + ")")
	}
	if u.Field != "" {
		b.WriteString(": " + u.Field)
	}
	b.WriteString(": not enforced in this build: " + u.Missing)
	return b.String()
}

// Reasons shared by several rules.
const (
	missGuardrails = "guardrails are not enforced: requests and answers pass unchecked"
)

// wholeCollections have no runtime effect at all in this build: each entry
// is reported once, whatever its fields.
var wholeCollections = map[string]string{
	resources.CollGuardrails:           missGuardrails,
	resources.CollGuardrailAttachments: missGuardrails,
}

// fieldRules classify every field path of the other collections: "" means
// the field has its runtime effect; anything else is what is missing. A
// path's rule is its longest classified prefix (a rule for `routing`
// covers `routing.targets[].model`). TestEveryFieldClassified fails when the
// loader reads a field no rule covers, so the list cannot rot as fields
// are added; when a feature lands, its rule becomes "".
var fieldRules = map[string]map[string]string{
	resources.CollProviderKeys: {
		"display_name": "", "provider": "", "adapter": "", "api_base": "", "api_key": "", "secret": "",
		"apis": "", "tls": "", "resolve_addresses": "",
		"request":                         "",
		"request.default_headers":         "",
		"request.forward_client_headers":  "",
		"request.param_renames":           "",
		"request.param_constraints":       "",
		"request.default_body_fields":     "",
		"response":                        "",
		"response.stream_done_marker":     "",
		"response.content_list_to_string": "",
		"response.reasoning_field":        "",
		"response.error_envelope":         "no adapter reads it: upstream error bodies are relayed as they are",
		"strip_headers":                   "", // inject-mode passthrough routes (edge/passthrough)
		"telemetry_tags":                  "",
	},
	resources.CollModels: {
		"display_name": "", "provider": "", "model_name": "", "provider_key": "", "provider_key_id": "",
		"timeout": "", "stream_timeout": "", "retries": "", "rate_limit": "", "allowed_cidrs": "", "cost": "",
		"background_model_check": "", "cooldown": "", "auto_prompt_caching": "", "effort_mapping": "",
		"routing":   "",
		"embedding": "",
		// The block enables /v1/embeddings; its values are read by the
		// vector consumers inside gw (semantic routers and guardrails,
		// edge/embed: vectors of another length are refused, and
		// normalize: false has gw normalise them).
		"embedding.dimensions":    "",
		"embedding.normalize":     "",
		"ensemble":                "",
		"ensemble.panel[].weight": "accepted but ignored (spec): every member's answer counts the same for the judge",
		"semantic":                "",
	},
	resources.CollAPIKeys: {
		"display_name": "", "key_env": "", "key_hash": "", "allowed_models": "", "rate_limit": "",
		"expires_at": "", "disabled": "", "team_id": "", "user_id": "", "user_name": "",
		"mcp_access":      "",
		"mcp_rate_limits": "",
		"allowed_agents":  "",
		"allowed_routes":  "",
		"jwt_subject":     "",
		"jwt_provider":    "",
	},
	resources.CollOIDCProviders: {
		"name": "", "issuer": "", "audiences": "", "jwks_uri": "", "hmac_secret": "", "identity_claim": "",
		"required_scopes": "", "bound_claims": "", "leeway_secs": "", "enabled": "",
	},
	resources.CollClaimMappings: {
		"name": "", "jwt_provider": "", "priority": "", "match": "", "resolve": "", "enabled": "",
	},
	// Every exporter kind has its sink (edge/usage and its sub-packages).
	resources.CollObservabilityExporters: {
		"name": "", "kind": "", "enabled": "", "batch_size": "", "flush_interval_ms": "",
		"endpoint": "", "headers": "", "timeout_ms": "", "compression": "",
		"provider": "", "bucket": "", "prefix": "", "region": "", "auth_mode": "", "access_key_id": "", "secret_access_key": "",
		"project": "", "logstore": "", "access_key_secret": "", "site": "", "api_key": "", "service": "",
	},
	// Exact and semantic policies work (edge/cache, edge/cache_stage.go).
	resources.CollCachePolicies: {
		"name": "", "backend": "", "match": "", "ttl_seconds": "", "models": "", "max_entry_bytes": "",
		"namespace": "", "enabled": "", "semantic": "",
	},
	// edge/a2a serves every field.
	resources.CollA2AAgents: {
		"name": "", "display_name": "", "url": "", "description": "", "headers": "", "timeout_ms": "", "agent_card_path": "",
	},
	// edge/passthrough serves every field (inject mode signs bedrock
	// requests and sends vertex access tokens).
	resources.CollPassthroughRoutes: {
		"name": "", "display_name": "", "path": "", "upstream": "", "methods": "", "strip_prefix": "", "timeout_ms": "",
		"provider_key": "", "provider_key_id": "", "anonymous_key": "", "anonymous_key_id": "", "forward_client_headers": "",
	},
	// edge/mcp serves type mcp and type openapi servers.
	resources.CollMCPServers: {
		"name": "", "display_name": "", "type": "", "url": "", "transport": "", "headers": "", "provider_key": "",
		"allowed_tools": "", "timeout_ms": "", "description": "",
		"spec_url": "", "spec": "",
	},
	resources.CollMCPAuthSettings: {
		"resource_url": "", "anonymous": "",
	},
	resources.CollRateLimitPolicies: {
		"name": "", "scope": "", "scope_ref": "", "window": "", "max_requests": "", "max_tokens": "", "match": "",
	},
}

// familyMisses are provider-key rules that apply on some adapter families
// and mean nothing on others (family → field → what is missing). The body
// rules (param_renames, param_constraints, default_body_fields,
// content_list_to_string) apply on every family through adapters/bodyrules;
// a family that cannot apply one adds a line here.
var familyMisses = map[string]map[string]string{
	"anthropic": {
		"response.reasoning_field": "a Messages upstream's reasoning is its thinking blocks: there is no other field to read",
	},
}

// geminiFlatten is why content_list_to_string means nothing on adapter
// vertex keys serving Gemini: the other body rules apply (adapters/vertex).
const geminiFlatten = "means nothing on adapter vertex keys serving Gemini: Gemini parts have no string form"

// bedrockIgnored are the provider-key fields without effect on adapter
// bedrock keys: tls and resolve_addresses by the spec, and the one body
// rule Converse cannot express (the others apply: adapters/bedrock).
var bedrockIgnored = map[string]string{
	"tls":                             "ignored for adapter bedrock (spec): the deployment-level upstream.tls applies",
	"resolve_addresses":               "ignored for adapter bedrock (spec): the api_base host is resolved by DNS",
	"response.content_list_to_string": "means nothing on adapter bedrock keys: Converse content is always a list of blocks",
}

// classify returns the rule path covering path in coll and its reason;
// ok is false when no rule covers it.
func classify(coll, path string) (rule, missing string, ok bool) {
	if why, whole := wholeCollections[coll]; whole {
		return "", why, true
	}
	rules := fieldRules[coll]
	for p := path; ; {
		if why, found := rules[p]; found {
			return p, why, true
		}
		i := strings.LastIndexByte(p, '.')
		if i < 0 {
			return "", "", false
		}
		p = strings.TrimSuffix(p[:i], "[]")
	}
}

// unenforced lists what res configures without runtime effect, in file
// order, one item per entry and rule.
func unenforced(res *resources.Resources, plans []*Plan, guards GuardrailCompiler) []Unenforced {
	out := []Unenforced{}
	type key struct {
		coll  string
		idx   int
		field string
	}
	seen := map[key]bool{}
	adapters := map[int]string{}
	vertexGemini := map[int]bool{} // vertex keys serving Gemini: no content_list_to_string
	for _, pk := range res.ProviderKeys {
		adapters[pk.Index] = pk.Adapter
		vertexGemini[pk.Index] = pk.Adapter == resources.AdapterVertex && vertex.ModeOf(pk.Provider) == vertex.ModeGemini
	}
	for _, f := range res.Fields {
		if guards != nil && (f.Collection == resources.CollGuardrails || f.Collection == resources.CollGuardrailAttachments) {
			continue // per entry below
		}
		field, missing, ok := classify(f.Collection, f.Path)
		if !ok {
			missing, field = "the field is not classified in admin/snapshot/unenforced.go (a bug)", f.Path
		}
		if why := familyMisses[adapters[f.Index]][field]; missing == "" && f.Collection == resources.CollProviderKeys && why != "" {
			missing = why
		}
		if why := bedrockIgnored[field]; missing == "" && why != "" && f.Collection == resources.CollProviderKeys && adapters[f.Index] == "bedrock" {
			missing = why
		}
		if missing == "" && f.Collection == resources.CollProviderKeys && field == "response.content_list_to_string" && vertexGemini[f.Index] {
			missing = geminiFlatten
		}
		if missing == "" {
			continue
		}
		k := key{f.Collection, f.Index, field}
		if seen[k] {
			continue
		}
		seen[k] = true
		entry := ""
		if f.IDField != "" {
			entry = f.IDField + "=" + f.ID
		}
		out = append(out, Unenforced{Collection: f.Collection, Entry: entry, Field: field, Missing: missing})
	}
	if guards != nil {
		out = append(out, unenforcedGuardrails(res, guards)...)
	}
	// Provider keys whose adapter family is not in this build, and the
	// aliases that therefore cannot be served.
	for _, p := range plans {
		switch {
		case p.Servable:
		case p.Kind == resources.KindDirect:
			out = append(out, Unenforced{Collection: resources.CollModels, Entry: "display_name=" + p.Alias,
				Missing: "the adapter of provider key " + p.Model.ProviderKeyName + " is not in this build: requests answer 501 and the alias is left out of /v1/models"})
		case p.Kind == resources.KindRouting:
			out = append(out, Unenforced{Collection: resources.CollModels, Entry: "display_name=" + p.Alias,
				Missing: "no target of this group can be served in this build: the alias is left out of /v1/models"})
		case p.Kind == resources.KindEnsemble:
			out = append(out, Unenforced{Collection: resources.CollModels, Entry: "display_name=" + p.Alias,
				Missing: "the judge or fewer than min_responses panel members can be served in this build: the alias answers 501 and is left out of /v1/models"})
		}
	}
	return out
}

// CountByCollection returns the number of items per collection, sorted by
// collection name (for the gauge).
func CountByCollection(list []Unenforced) []CollectionCount {
	m := map[string]int{}
	for _, u := range list {
		m[u.Collection]++
	}
	out := make([]CollectionCount, 0, len(m))
	for c, n := range m {
		out = append(out, CollectionCount{c, n})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Collection < out[j].Collection })
	return out
}

// CollectionCount is one collection's number of unenforced items.
type CollectionCount struct {
	Collection string
	Count      int
}

// unenforcedGuardrails lists, when guardrails are compiled, the entries of
// kinds this build does not run (attached, they answer per fail_open /
// output_fail_open: a bypass, or 422 guardrail_unavailable; never skipped).
func unenforcedGuardrails(res *resources.Resources, guards GuardrailCompiler) []Unenforced {
	var out []Unenforced
	for _, g := range res.Guardrails {
		if g.Kind != "" && !guards.Built(g.Kind) {
			out = append(out, Unenforced{Collection: resources.CollGuardrails, Entry: "name=" + g.Name,
				Missing: "kind " + g.Kind + " is not built: where attached, its checks fail and fail_open / output_fail_open decide (a recorded bypass, or 422 guardrail_unavailable)"})
		}
	}
	return out
}
