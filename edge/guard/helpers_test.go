package guard

import (
	"bytes"
	"context"
	"errors"
	"time"

	"gw/admin/resources"
)

// wordChecker is a test kind: every text containing word is blocked, or
// (mask) has word replaced by "[X]".
type wordChecker struct {
	word string
	mask bool
	err  error
}

func (w *wordChecker) Check(_ context.Context, req *Request, v *Verdict) error {
	if w.err != nil {
		return w.err
	}
	for i, t := range req.Texts {
		if !bytes.Contains(t.Data, []byte(w.word)) {
			continue
		}
		if !w.mask {
			v.Action, v.Rule = Block, "word"
			return nil
		}
		v.Action = Rewrite
		start := len(v.Buf)
		v.Buf = append(v.Buf, bytes.ReplaceAll(t.Data, []byte(w.word), []byte("[X]"))...)
		v.Masks = append(v.Masks, Mask{Index: i, Data: v.Buf[start:]})
	}
	return nil
}

var errBoom = errors.New("boom")

// stage builds a compiled stage around ck for a guardrail named name.
func stage(name string, ck Checker, mut func(g *resources.Guardrail)) *Stage {
	g := &resources.Guardrail{Name: name, Kind: "test", Enabled: true, HookPoint: resources.HookPointBoth,
		InputMessages: resources.InputMessagesAll, EnforcementMode: resources.EnforcementBlock}
	if mut != nil {
		mut(g)
	}
	ch, err := Compile(map[resources.GuardrailScope]*resources.GuardrailChain{{Type: "model", Name: "m"}: {Input: []*resources.Guardrail{g}, Output: []*resources.Guardrail{g}}},
		Table{"test": func(*resources.Guardrail) (Checker, error) { return ck, nil }})
	if err != nil {
		panic(err)
	}
	return ch[resources.GuardrailScope{Type: "model", Name: "m"}].Input[0]
}

func at(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}
