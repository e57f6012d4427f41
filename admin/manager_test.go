package admin

import (
	"context"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"gw/admin/resources"
	"gw/admin/snapshot"
	"gw/edge/guard"
)

// retireChecker counts Retire calls.
type retireChecker struct{ retired *atomic.Int32 }

func (retireChecker) Check(context.Context, *guard.Request, *guard.Verdict) error { return nil }
func (c retireChecker) Retire()                                                   { c.retired.Add(1) }

// TestApplyRetiresReplacedSnapshot: once a new snapshot serves, the old
// one's checkers are retired (their warm resources freed), and only the
// old one's.
func TestApplyRetiresReplacedSnapshot(t *testing.T) {
	const file = `_format_version: "1"
provider_keys:
  - {display_name: oa, api_key: sk-x, api_base: "http://127.0.0.1:9/v1"}
models:
  - {display_name: gpt, provider: openai, model_name: gpt-4o, provider_key: oa}
guardrails:
  - {name: js, kind: custom, hook_point: input, script: "export function checkInput() {}"}
guardrail_attachments:
  - {guardrail_id: js, scope_type: model, scope_id: gpt}
`
	path := filepath.Join(t.TempDir(), "gw.yaml")
	if err := os.WriteFile(path, []byte(file), 0o600); err != nil {
		t.Fatal(err)
	}
	var gens []*atomic.Int32
	table := guard.Table{resources.GuardrailCustom: func(*resources.Guardrail) (guard.Checker, error) {
		n := new(atomic.Int32)
		gens = append(gens, n)
		return retireChecker{n}, nil
	}}
	m := NewManager(path, func(string) (string, bool) { return "", false }, snapshot.Options{Guardrails: table}, &snapshot.Holder{}, nil)
	for i := range 3 {
		if err := m.Apply("test").Err(); err != nil {
			t.Fatal(err)
		}
		if len(gens) != i+1 {
			t.Fatalf("%d compiles after %d applies", len(gens), i+1)
		}
		for g, n := range gens {
			want := int32(1)
			if g == i {
				want = 0 // the serving snapshot's checker
			}
			if got := n.Load(); got != want {
				t.Fatalf("apply %d: checker of snapshot %d retired %d times; want %d", i, g, got, want)
			}
		}
	}
}
