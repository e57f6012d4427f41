package resources

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"
)

func keysFile(extra string) string {
	return baseFile + "api_keys:\n  - display_name: a\n    key_env: CALLER_A\n" + extra
}

func TestAPIKeyErrors(t *testing.T) {
	f := func(extra, want string) {
		t.Helper()
		loadErr(t, keysFile(extra), want)
	}
	const at = "api_keys[1] (display_name=b): "
	f("  - display_name: b\n", at+"key_env: required (or key_hash)")
	f("  - display_name: b\n    key_env: CALLER_B\n    key_hash: "+strings.Repeat("a", 64)+"\n", at+"key_env: set exactly one of key_env and key_hash")
	f("  - display_name: b\n    key_env: GW_KEY\n", at+`key_env: variable "GW_KEY" uses the GW_ prefix`)
	f("  - display_name: b\n    key_env: NOPE\n", at+`key_env: environment variable "NOPE" is not set`)
	f("  - display_name: b\n    key_env: EMPTY\n", at+`key_env: environment variable "EMPTY" is empty`)
	f("  - display_name: b\n    key_env: ${CALLER_B}\n", at+"key_env: must be a bare variable name")
	f("  - display_name: b\n    key_hash: ABC\n", at+"key_hash: must be the lowercase hex SHA-256")
	f("  - display_name: b\n    key_hash: "+strings.ToUpper(hexSHA("x"))+"\n", at+"key_hash: must be the lowercase hex SHA-256")
	// Duplicate credential: names entries only, never the hash or key.
	all := loadErr(t, keysFile("  - display_name: b\n    key_hash: "+hexSHA("caller-a-secret")+"\n"), at+"key_hash: resolves to the same credential as api_keys[0] (display_name=a)")
	if strings.Contains(all, hexSHA("caller-a-secret")) || strings.Contains(all, "caller-a-secret") {
		t.Fatalf("error leaks credential material: %s", all)
	}
	f("  - display_name: b\n    key_env: CALLER_A\n", at+"key_env: resolves to the same credential as api_keys[0] (display_name=a)")
	f("  - display_name: b\n    key_env: CALLER_B\n    allowed_models: [\"a*b*\"]\n", at+"allowed_models[0]: a glob may hold a single '*'")
	f("  - display_name: b\n    key_env: CALLER_B\n    allowed_models: [gpt-x]\n", at+`allowed_models[0]: unknown model "gpt-x"; available: gpt`)
	f("  - display_name: b\n    key_env: CALLER_B\n    allowed_routes: [nope]\n", at+`allowed_routes[0]: unknown passthrough route "nope"`)
	f("  - display_name: b\n    key_env: CALLER_B\n    mcp_rate_limits: {gh: {rpm: 1}}\n", at+`mcp_rate_limits.gh: unknown MCP server "gh"`)
	f("  - display_name: b\n    key_env: CALLER_B\n    mcp_access: {deny: [x]}\n", at+"mcp_access.allow: required")
	f("  - display_name: b\n    key_env: CALLER_B\n    jwt_subject: u1\n", at+"jwt_provider: required when jwt_subject is set")
	f("  - display_name: b\n    key_env: CALLER_B\n    jwt_provider: corp\n", at+"jwt_subject: required when jwt_provider is set")
	f("  - display_name: b\n    key_env: CALLER_B\n    jwt_provider: corp\n    jwt_subject: u1\n", at+`jwt_provider: unknown OIDC provider "corp"`)
	f("  - display_name: b\n    key_env: CALLER_B\n    expires_at: tomorrow\n", at+"expires_at: must be an RFC 3339 timestamp")
	f("  - display_name: b\n    key_env: CALLER_B\n    disabled: \"true\"\n", at+"disabled: must be a boolean, got a string")
	f("  - display_name: b\n    key_env: CALLER_B\n    rate_limit: {tpm: 1.5}\n", at+"rate_limit.tpm: must be an integer, got a number")
}

func hexSHA(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

func TestAPIKeyFields(t *testing.T) {
	r := mustLoad(t, keysFile(`    allowed_models: ["*", gpt, "team-a/*"]
    rate_limit: {rpm: 60, tpd: 100000, concurrency: 2}
    mcp_access: {allow: ["github__*"], deny: [github__delete_repo]}
    allowed_agents: ["agent-*"]
    expires_at: "2030-01-02T03:04:05Z"
    team_id: t1
    user_id: u1
    user_name: Ann
  - display_name: b
    key_hash: `+hexSHA("caller-b-secret")+`
    disabled: true
`))
	a, b := r.APIKeys[0], r.APIKeys[1]
	if a.Hash != sha256.Sum256([]byte("caller-a-secret")) || b.Hash != sha256.Sum256([]byte("caller-b-secret")) {
		t.Fatal("hash mismatch")
	}
	if len(a.AllowedModels) != 3 || a.RateLimit.RPM != 60 || a.MCPAccess.Deny[0] != "github__delete_repo" || a.ExpiresAt.Year() != 2030 || a.TeamID != "t1" {
		t.Fatalf("fields: %+v", a)
	}
	if !b.Disabled || b.MCPAccess != nil || b.AllowedModels != nil {
		t.Fatalf("defaults: %+v", b)
	}
}

func TestGlobMatch(t *testing.T) {
	f := func(g, name string, want bool) {
		t.Helper()
		if got := GlobMatch(g, name); got != want {
			t.Fatalf("GlobMatch(%q, %q) = %v; want %v", g, name, got, want)
		}
	}
	f("*", "anything", true)
	f("*", "", true)
	f("team-a/*", "team-a/gpt", true)
	f("team-a/*", "team-b/gpt", false)
	f("*-mini", "gpt-mini", true)
	f("g*i", "gi", true)
	f("ab*ba", "aba", false) // prefix and suffix must not overlap
	f("exact", "exact", true)
	f("exact", "exact2", false)
}
