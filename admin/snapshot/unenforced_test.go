package snapshot

import (
	"os"
	"strings"
	"testing"

	"gw/admin/resources"
)

func loadFile(t *testing.T, path string, env map[string]string) *resources.Resources {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	res := resources.Load(data, func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	if err := res.Err(); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return res.Resources
}

var exampleEnv = map[string]string{"OPENAI_API_KEY": "o", "ANTHROPIC_API_KEY": "a", "DEMO_CALLER_KEY": "k1", "DEMO_TEAM_KEY": "k2",
	"DEMO_OIDC_HMAC": "demo-hmac-secret-at-least-32-bytes-long", "MOCK_BASE": "http://127.0.0.1:9999",
	"BEDROCK_CREDENTIALS": `{"access_key_id":"a","secret_access_key":"b","region":"us-east-1"}`}

// TestEveryFieldClassified walks every field the loader reads in the
// example file and in a file that writes every field of the collections gw
// partly enforces: each must be classified (enforced, or on the
// unenforced list with what is missing). A field added to the loader
// fails here until its runtime effect, or its absence, is declared in
// unenforced.go.
func TestEveryFieldClassified(t *testing.T) {
	for _, f := range []struct {
		path string
		env  map[string]string
	}{{"../../examples/gw.yaml", exampleEnv}, {"testdata/every_field.yaml", map[string]string{"K": "caller"}}} {
		res := loadFile(t, f.path, f.env)
		if len(res.Fields) == 0 {
			t.Fatalf("%s: the loader recorded no fields", f.path)
		}
		for _, u := range res.Fields {
			if _, _, ok := classify(u.Collection, u.Path); !ok {
				t.Errorf("%s: %s.%s is read by the loader but neither enforced nor listed in admin/snapshot/unenforced.go", f.path, u.Collection, u.Path)
			}
		}
	}
}

// TestUnenforcedExample names every unenforced item of examples/gw.yaml,
// and nothing that works.
func TestUnenforcedExample(t *testing.T) {
	s, err := Compile(loadFile(t, "../../examples/gw.yaml", exampleEnv), DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, u := range s.Unenforced {
		got = append(got, u.Collection+"|"+u.Entry+"|"+u.Field)
		if u.Missing == "" {
			t.Errorf("%v: no reason", u)
		}
	}
	want := []string{
		"guardrails|name=no-codenames|",
		"guardrails|name=pii-mask|",
		"guardrails|name=no-shouting|",
		"guardrails|name=presidio-pii|",
		"guardrails|name=moderation|",
		"guardrails|name=prompt-attacks|",
		"guardrails|name=no-weapons|",
		"guardrail_attachments|identity=no-weapons/model/smart-router|",
		"guardrail_attachments|identity=no-codenames/model/gpt-4o|",
		"guardrail_attachments|identity=pii-mask/team/team-a|",
		"guardrail_attachments|identity=no-shouting/api_key/demo|",
		"guardrail_attachments|identity=presidio-pii/model/gpt-4o-safe|",
		"guardrail_attachments|identity=moderation/model/gpt-4o-safe|",
		"guardrail_attachments|identity=prompt-attacks/model/gpt-4o-safe|",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("unenforced list of examples/gw.yaml:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// Aliases that cannot be served are not servable; the rest are. A
	// semantic router is servable once its examples are embedded
	// (Options.Prepare), which a validation-only compile never does.
	for alias, want := range map[string]bool{"gpt-4o": true, "fast": true, "claude-sonnet": true, "panel": true, "smart-router": false} {
		if s.Plans[alias].Servable != want {
			t.Errorf("%s: servable %v; want %v", alias, !want, want)
		}
	}
}

// TestUnenforcedRules: per-adapter rules and fields of entries that work.
func TestUnenforcedRules(t *testing.T) {
	s, err := Compile(loadFile(t, "testdata/every_field.yaml", map[string]string{"K": "caller"}), DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, u := range s.Unenforced {
		got = append(got, u.Entry+"|"+u.Field)
	}
	want := []string{
		"display_name=oa|response.error_envelope",
		// The body rules apply on the anthropic family too (adapters/bodyrules);
		// semantic cache policies work (edge/cache).
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("got:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
