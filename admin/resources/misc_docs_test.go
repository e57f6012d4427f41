package resources

import (
	"os"
	"strings"
	"testing"
)

// TestMiscDocExamplesLoad loads every YAML example of the "other collections"
// part of docs/CONFIG.md on top of a base file that defines the names
// they refer to, so the reference cannot drift from the loader.
func TestMiscDocExamplesLoad(t *testing.T) {
	full, err := os.ReadFile("../../docs/CONFIG.md")
	if err != nil {
		t.Fatalf("cannot read the reference: %v", err)
	}
	const marker = `<a id="other-collections"></a>`
	i := strings.Index(string(full), marker)
	if i < 0 {
		t.Fatalf("docs/CONFIG.md lacks %s", marker)
	}
	doc := full[i:]
	var blocks []string
	for rest := string(doc); ; {
		i := strings.Index(rest, "```yaml\n")
		if i < 0 {
			break
		}
		rest = rest[i+len("```yaml\n"):]
		j := strings.Index(rest, "```")
		blocks = append(blocks, rest[:j])
		rest = rest[j+3:]
	}
	if len(blocks) != 9 {
		t.Fatalf("got %d yaml examples; want one per collection (9)", len(blocks))
	}
	// The examples refer to provider keys openai-prod and docs-api and to a
	// support-* model besides the names miscBase defines.
	base := strings.Replace(miscBase, "models:\n", `  - display_name: openai-prod
    api_key: ${OPENAI_KEY}
    api_base: https://api.openai.com/v1
  - display_name: docs-api
    api_key: ${OPENAI_KEY}
models:
  - display_name: support-bot
    provider: openai
    model_name: gpt-4o-mini
    provider_key: oa
`, 1)
	env := map[string]string{"CI_JWT_SECRET": strings.Repeat("s", 40), "GCS_HMAC_ID": "id", "GCS_HMAC_SECRET": "secret"}
	for k, v := range miscEnv {
		env[k] = v
	}
	r := Load([]byte(base+strings.Join(blocks, "")), envOf(env))
	if len(r.Errors) > 0 {
		t.Fatalf("doc examples do not load:\n%s", miscLines(r.Errors))
	}
	if len(r.Warnings) > 0 {
		t.Fatalf("doc examples warn:\n%s", miscLines(r.Warnings))
	}
}
