package adapters

import (
	"gw/adapters/bodyrules"
	"gw/adapters/headers"
)

// KeyConfig is what every adapter family reads of one provider key. The
// snapshot compiler (admin/snapshot) fills it from the loaded provider key;
// family-specific settings travel next to it (openai.Config), and the
// upstream client settings in registry.Config. Adapters may keep slices of
// it: it must not change once an adapter is compiled from it.
type KeyConfig struct {
	// Name is the key's display_name: adapters print it in place of the
	// credential.
	Name string
	// Credential is api_key (or its spelling `secret`); it may be unset.
	Credential Secret
	// BaseURL is api_base as written; "" means the family's default
	// (registry.BaseURL).
	BaseURL string
	// Headers are request.default_headers and request.forward_client_headers.
	Headers headers.Config
	// Body are the body rules (param_renames, param_constraints,
	// default_body_fields, content_list_to_string); every family applies
	// them to the bodies it sends in its own wire format (bodyrules.Apply).
	Body bodyrules.Config
	// Responses and Messages are the caller surfaces the key's endpoint
	// serves in their own wire format (the `apis` rules, already resolved);
	// count_tokens follows Messages.
	Responses NativeSurface
	Messages  NativeSurface
}

// NativeSurface is one caller surface a key may serve natively.
type NativeSurface struct {
	// On reports the surface native; when false the surface is converted
	// to chat completions.
	On bool
	// Base replaces the key's base URL for the surface; "" keeps it.
	Base string
}
