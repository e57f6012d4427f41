package custom_test

import (
	"context"
	"testing"

	"gw/admin/resources"
	"gw/edge/guard"
)

// TestFromResourceFile builds a checker from a guardrail as the loader
// decodes it from YAML: interpolated secrets, defaults, the loader's own
// check of the script.
func TestFromResourceFile(t *testing.T) {
	res := resources.Load([]byte(`_format_version: "1"
guardrails:
  - name: ticket-policy
    kind: custom
    hook_point: input
    timeout_ms: 60000
    script: |
      export function checkInput(input, ctx) {
        const hit = input.texts.some(t => t.text.includes(ctx.secrets.CODEWORD));
        return hit ? { action: "block", reason: "codeword used on " + ctx.model } : null;
      }
    secrets:
      CODEWORD: ${GW_TEST_CODEWORD}
`), func(name string) (string, bool) { return "pineapple-42", name == "GW_TEST_CODEWORD" })
	if err := res.Err(); err != nil {
		t.Fatal(err)
	}
	g := res.Resources.Guardrails[0]
	if o := g.Options.(*resources.CustomScriptOptions); o.MaxMemoryBytes != resources.DefaultCustomMaxMemoryBytes {
		t.Fatalf("max_memory_bytes default = %d", o.MaxMemoryBytes)
	}
	c := newCheckerWith(t, g)
	var v guard.Verdict
	req := &guard.Request{Phase: guard.Input, Model: "gpt-x", Texts: []guard.Text{{Data: []byte("a pineapple-42 please")}}}
	if err := c.Check(context.Background(), req, &v); err != nil {
		t.Fatal(err)
	}
	// The reason would have shown the secret had the script put it there;
	// here it names the model only.
	if v.Action != guard.Block || v.Message != "codeword used on gpt-x" {
		t.Fatalf("got %d %q", v.Action, v.Message)
	}
	if !c.Runs(guard.Input) || c.Runs(guard.Output) {
		t.Fatal("hooks do not follow the module's exports")
	}
}
