// Package adapters defines how gw talks to providers: the Adapter interface
// that turns a caller request into an upstream request, the ChatInput the
// edge hands it, the KeyConfig every family compiles from, and the errors and
// Usage shared by every adapter family.
//
// Nothing under adapters/ imports gw/admin (imports_test.go enforces it):
// admin/snapshot compiles each loaded provider key into the config types
// below and hands them down.
//
// # Layout
//
//   - adapters: the interface, ChatInput, KeyConfig (what every family reads
//     of a provider key), Secret (a credential that never prints), Options,
//     Usage, errors.
//   - adapters/registry: the table of families keyed by the provider key's
//     resolved `adapter` (FamilyOpenAI ...), Config (KeyConfig, the
//     family-specific parts and the upstream client settings of one key),
//     plus BaseURL. It imports the families, so the root stays free of them.
//   - adapters/openai: the openai and azure-openai adapters (openai.Config:
//     provider, param_renames, temperature bounds, default_body_fields,
//     content_list_to_string) and the chat-completions response helpers
//     (RewriteModel, IsUsageOnlyChunk, ExtractUsage).
//   - adapters/anthropic: the Messages API adapter (KeyConfig only).
//   - adapters/native: the surfaces a key serves in the caller's own wire
//     format.
//   - adapters/headers: default_headers and forward_client_headers
//     (headers.Config) compiled per provider key; the request-variable enum
//     (Var) and the never-relayed list, which the resource loader uses too.
//   - adapters/upstream: the HTTP client pool, dialer, DNS cache, stream read
//     deadlines and error classification.
//
// # Lifecycle
//
// When a snapshot is compiled, for each provider key pk:
//
//	cfg := adapterConfig(pk)                                // admin/snapshot: resources → *registry.Config
//	a, err := registry.New(cfg, adapters.Options{})         // ErrUnsupported: bedrock, vertex for now
//	base, err := registry.BaseURL(cfg)
//	c, err := pool.Client(cfg.Target(base))                 // pool lives for the process
//
// Per request the edge fills a ChatInput, calls a.BuildChat into a pooled
// fasthttp.Request, sends it with c.Do or c.DoStream, and rewrites answers
// with the openai helpers. Adapters and clients are immutable and safe for
// concurrent use; nothing is compiled per request.
//
// # Decisions
//
// Reasoning models (max_tokens becomes max_completion_tokens): recognised by
// the upstream model name only, see openai.IsReasoningModel (o<digits> and
// gpt-<N>=5+, after an optional "vendor/" prefix, case-insensitive), for
// provider openai and Azure-style keys (adapter azure-openai, or provider
// azure/azure-openai/azure_openai), and only when max_completion_tokens is
// absent. param_renames run after it and have the last word.
//
// Developer role: kept only for provider `openai` on the openai adapter,
// where the provider is the model's `provider`, or the key's when the model
// gives none; every other chat-completions upstream gets `system` in the same
// position.
//
// Base URL: api_base, else https://api.openai.com/v1 for the openai
// adapter; the azure-openai adapter requires api_base. User-info in api_base
// stays in the URL as written; fasthttp then sends it as
// `Authorization: Basic ...`, which replaces the Bearer credential.
//
// Header precedence: see package headers (forwarded exact credential slot >
// gw's own headers > default headers > forwarded headers > credential-slot
// defaults).
//
// Body edits are on raw bytes (gw/sse/rawjson): untouched members keep their
// bytes; whitespace between top-level members (and between messages, when a
// message is edited) may be normalised.
//
// DNS cache: 30 s for successes, 1 s for failures, 1,024 names, random
// eviction preferring expired entries, one lookup per name in flight.
package adapters
