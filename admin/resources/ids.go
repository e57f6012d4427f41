package resources

import "github.com/google/uuid"

// IDNamespace is the UUIDv5 namespace of every derived entry ID.
var IDNamespace = uuid.MustParse("63e50ab2-677a-54d3-8d1e-c0cb29ceae94")

// Entry kinds used in derived IDs: uuid5(IDNamespace, "<kind>/<identity>").
const (
	KindProviderKey           = "provider_key"
	KindModel                 = "model"
	KindAPIKey                = "api_key"
	KindOIDCProvider          = "oidc_provider"
	KindMCPAuthSettings       = "mcp_auth_settings"
	KindClaimMapping          = "claim_mapping"
	KindGuardrail             = "guardrail"
	KindGuardrailAttachment   = "guardrail_attachment"
	KindMCPServer             = "mcp_server"
	KindA2AAgent              = "a2a_agent"
	KindPassthroughRoute      = "passthrough_route"
	KindCachePolicy           = "cache_policy"
	KindObservabilityExporter = "observability_exporter"
	KindRateLimitPolicy       = "rate_limit_policy"
)

// DeriveID returns the deterministic entry ID of kind/identity.
func DeriveID(kind, identity string) string {
	return uuid.NewSHA1(IDNamespace, []byte(kind+"/"+identity)).String()
}
