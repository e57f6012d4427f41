package resources

import (
	"strings"
	"testing"
)

func TestInterpolate(t *testing.T) {
	env := envOf(map[string]string{"A": "alpha", "B": "b$eta", "EMPTY": ""})
	ok := func(in, want string) {
		t.Helper()
		got, _, err := Interpolate(in, env)
		if err != nil {
			t.Fatalf("Interpolate(%q): unexpected error %v", in, err)
		}
		if got != want {
			t.Fatalf("Interpolate(%q) = %q; want %q", in, got, want)
		}
	}
	bad := func(in, want string) {
		t.Helper()
		_, _, err := Interpolate(in, env)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("Interpolate(%q) error = %v; want %q", in, err, want)
		}
		if strings.Contains(err.Error(), "alpha") {
			t.Fatalf("error leaks a value: %v", err)
		}
	}
	ok("plain", "plain")
	ok("${A}", "alpha")
	ok("x-${A}-y", "x-alpha-y")  // partial interpolation
	ok("${A}${A}", "alphaalpha") // adjacent references
	ok("${B}", "b$eta")          // values are not re-scanned
	ok("$$", "$")                // $$ -> $
	ok("$${A}", "${A}")          // escaped reference stays literal
	ok("$A", "$A")               // bare $VAR kept
	ok("cost $5", "cost $5")     // lone $
	ok("end$", "end$")           // trailing $
	ok("$$$${A}", "$${A}")       // two escapes
	bad("${UNSET}", `environment variable "UNSET" is not set`)
	bad("${EMPTY}", `environment variable "EMPTY" is empty`)
	bad("${A", "unclosed")
	bad("x ${", "unclosed")
	bad("${}", "empty")
	bad("${A:-def}", "fallbacks")
	bad("${A:?msg}", "fallbacks")
	bad("${1A}", "invalid variable name")
}

func TestInterpolationInFile(t *testing.T) {
	// Values cannot inject YAML structure: the value is a string, never parsed.
	env := map[string]string{"OPENAI_KEY": "k", "INJECT": "x\nextra: 1", "NUM": "5", "HOST": "h.example.com"}
	src := `_format_version: "1"
provider_keys:
  - display_name: "${INJECT}"
    api_key: ${OPENAI_KEY}
    api_base: https://${HOST}/v1
`
	r := Load([]byte(src), envOf(env))
	if r.Err() != nil {
		t.Fatal(r.Err())
	}
	pk := r.Resources.ProviderKeys[0]
	if pk.DisplayName != "x\nextra: 1" {
		t.Fatalf("display_name = %q", pk.DisplayName)
	}
	if pk.APIBase != "https://h.example.com/v1" {
		t.Fatalf("partial interpolation: api_base = %q", pk.APIBase)
	}
	// Non-strings are never interpolated: an integer field with a reference is a type error.
	errs := loadErrEnv(t, env, baseFile+"    timeout: ${NUM}\n", "models[0] (display_name=gpt): timeout: must be an integer, got a string")
	_ = errs
	// Mapping keys are never interpolated: a key spelled ${X} is an unknown field.
	loadErrEnv(t, env, baseFile+"    ${NUM}: 1\n", "models[0] (display_name=gpt): ${NUM}: unknown field")
	// Unset variable names the variable and the field, never a value.
	all := loadErrEnv(t, env, `_format_version: "1"
provider_keys:
  - display_name: oa
    api_key: ${MISSING_KEY}
`, `provider_keys[0] (display_name=oa): api_key: environment variable "MISSING_KEY" is not set`)
	if strings.Contains(all, "k") && strings.Contains(all, ": k") {
		t.Fatalf("value leaked: %s", all)
	}
}

func loadErrEnv(t *testing.T, env map[string]string, src, want string) string {
	t.Helper()
	r := Load([]byte(src), envOf(env))
	if len(r.Errors) == 0 {
		t.Fatalf("load succeeded; want error containing %q", want)
	}
	all := r.Err().Error()
	if !strings.Contains(all, want) {
		t.Fatalf("errors do not contain %q:\n%s", want, all)
	}
	return all
}

func TestErrorsNeverHoldVariableValues(t *testing.T) {
	env := map[string]string{"TEAM": "team-zeta-secretish", "OPENAI_KEY": "k"}
	all := loadErrEnv(t, env, `_format_version: "1"
provider_keys:
  - display_name: ${TEAM}-key
    api_key: ${OPENAI_KEY}
    colour: red
models:
  - display_name: m
    provider: openai
    model_name: x
    provider_key: ${TEAM}-other
`, "provider_keys[0] (display_name=${TEAM}-key): colour: unknown field")
	if strings.Contains(all, "team-zeta-secretish") {
		t.Fatalf("value leaked:\n%s", all)
	}
	if !strings.Contains(all, `provider_key: unknown provider key "${TEAM}-other"`) {
		t.Fatalf("reference error not scrubbed as expected:\n%s", all)
	}
}
