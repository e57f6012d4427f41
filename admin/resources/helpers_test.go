package resources

import (
	"testing"
)

// testEnv is the environment every loader test sees.
var testEnv = map[string]string{
	"OPENAI_KEY":    "sk-test-openai",
	"ANTHROPIC_KEY": "sk-ant-test",
	"CALLER_A":      "caller-a-secret",
	"CALLER_B":      "caller-b-secret",
	"EMPTY":         "",
	"HOST":          "api.example.com",
	"HMAC_SECRET":   "0123456789abcdef0123456789abcdef-hmac",
}

func envOf(m map[string]string) Env {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

// baseFile is a minimal valid file that tests extend.
const baseFile = `_format_version: "1"
provider_keys:
  - display_name: oa
    api_key: ${OPENAI_KEY}
models:
  - display_name: gpt
    provider: openai
    model_name: gpt-4o
    provider_key: oa
`

// mustLoad loads src and fails the test on any error.
func mustLoad(t *testing.T, src string) *Resources {
	t.Helper()
	r := Load([]byte(src), envOf(testEnv))
	if len(r.Errors) > 0 {
		t.Fatalf("unexpected load errors:\n%s", r.Err())
	}
	return r.Resources
}

// loadErr loads src, requires it to fail, and requires one error line to contain want.
func loadErr(t *testing.T, src, want string) string {
	t.Helper()
	return loadErrEnv(t, testEnv, src, want)
}
