package fuzz

import (
	"context"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"gw/admin/resources"
	"gw/edge/guard"
	"gw/edge/guard/custom"
)

var customSentinels = []error{custom.ErrTimeout, custom.ErrMemory, custom.ErrThrew, custom.ErrResult, custom.ErrEngine}

// checkCustomVerdict holds the verdict invariants the engine relies on.
func checkCustomVerdict(t *testing.T, texts []guard.Text, v *guard.Verdict) {
	t.Helper()
	switch v.Action {
	case guard.Allow:
		if len(v.Masks) != 0 || v.Rule != "" || v.Message != "" {
			t.Fatalf("allow with leftovers: %+v", v)
		}
	case guard.Block:
		if v.Rule == "" || len(v.Rule) > 64 || !utf8.ValidString(v.Message) || len(v.Message) > 3072 || len(v.Masks) != 0 {
			t.Fatalf("bad block verdict: %+v", v)
		}
	case guard.Rewrite:
		if len(v.Masks) == 0 {
			t.Fatal("rewrite without masks")
		}
		last := -1
		for _, m := range v.Masks {
			if m.Index <= last || m.Index >= len(texts) {
				t.Fatalf("mask index %d after %d of %d texts", m.Index, last, len(texts))
			}
			last = m.Index
			if !utf8.Valid(m.Data) {
				t.Fatalf("mask %d is not UTF-8: %q", m.Index, m.Data)
			}
			if string(m.Data) == string(texts[m.Index].Data) {
				t.Fatalf("mask %d does not change its text", m.Index)
			}
		}
	default:
		t.Fatalf("unknown action %d", v.Action)
	}
}

func checkCustomError(t *testing.T, err error) {
	t.Helper()
	for _, s := range customSentinels {
		if errors.Is(err, s) {
			return
		}
	}
	t.Fatalf("error wraps no sentinel: %v", err)
}

// FuzzGuardCustomDecode feeds arbitrary encodings to the Go-side decoder of
// a hook's result (a script can replace the glue's helpers, so the decoder
// must take anything): never a panic, and a verdict that is either whole
// and valid or left reset with an error.
func FuzzGuardCustomDecode(f *testing.F) {
	for _, s := range []string{"A", "B\n", "Brule\nreason", "R0,1:x", "R0,2:😀1,0:", "R1,3:b😀", "ETypeError@1:2",
		"Ethrow", "M", "S1", "S7", "R0,99999999:", "R0,1:x0,1:y", "B" + strings.Repeat("r", 64) + "\n", "\x00", "R-1,1:x"} {
		f.Add(s, "a", "b😀")
	}
	f.Fuzz(func(t *testing.T, enc, t0, t1 string) {
		texts := []guard.Text{{Data: []byte(t0)}, {Role: guard.RoleAssistant, Data: []byte(t1)}}
		var v guard.Verdict
		err := custom.DecodeResult(enc, texts, &v)
		if err != nil {
			checkCustomError(t, err)
			if v.Action != guard.Allow || len(v.Masks) != 0 || len(v.Buf) != 0 {
				t.Fatalf("error %v left a verdict: %+v", err, v)
			}
			return
		}
		checkCustomVerdict(t, texts, &v)
	})
}

// FuzzGuardCustomScript builds a hook returning an arbitrary JS expression
// (the fuzz input) and runs it through New and Check: a syntax error is a
// load error, anything returned or thrown is a valid verdict or a sentinel
// error, and no error text carries the request's text.
func FuzzGuardCustomScript(f *testing.F) {
	for _, s := range []string{
		`null`, `{action: "allow"}`, `{action: "block", reason: "r", rule: "x.y"}`, `{action: "block", reason: 1}`,
		`{action: "replace", texts: [null, "z"]}`, `{action: "replace", texts: input.texts.map(t => t.text + "!")}`,
		`{action: "replace", texts: ["\uD800", "\uDC00x"]}`, `(() => { throw new TypeError(input.texts[1].text) })()`,
		`Promise.resolve({action: "block"})`, `Promise.reject(input.texts[1].text)`, `new Promise(() => {})`,
		`{get action() { throw input.texts[1].text }}`, `(() => { while (true) {} })()`, `"x".repeat(1 << 30)`,
		`Symbol("s")`, `10n`, `[1, 2]`, `{action: "replace", texts: {length: 2}}`, `(Array.isArray = () => true, {action: "replace", texts: "ab"})`,
		`(RegExp.prototype.exec = () => ["x"], {action: "block", rule: "bad rule"})`, `) } export function checkOutput() { return (1`,
	} {
		f.Add(s, "hello")
	}
	f.Fuzz(func(t *testing.T, expr, text string) {
		g := &resources.Guardrail{Name: "fz", Kind: resources.GuardrailCustom, TimeoutMS: 100,
			Options: &resources.CustomScriptOptions{MaxMemoryBytes: 4 << 20, Secrets: map[string]resources.Secret{"k": resources.NewSecret("SECRET-VALUE-42")},
				Script: "export function checkInput(input, ctx) {\nreturn (" + expr + "\n);\n}"}}
		c, err := custom.New(g)
		if err != nil {
			checkCustomError(t, err)
			if strings.Contains(err.Error(), "SECRET-VALUE-42") {
				t.Fatalf("load error leaks a secret: %v", err)
			}
			return
		}
		defer c.(*custom.Checker).Close()
		req := &guard.Request{Phase: guard.Input, Model: "m", Texts: []guard.Text{
			{Data: []byte("first")}, {Data: []byte("PRIVATE-" + text)}}}
		var v guard.Verdict
		err = c.Check(context.Background(), req, &v)
		if err != nil {
			checkCustomError(t, err)
			if s := err.Error(); strings.Contains(s, "PRIVATE-") || strings.Contains(s, "SECRET-VALUE-42") {
				t.Fatalf("check error leaks script data: %v", s)
			}
			return
		}
		checkCustomVerdict(t, req.Texts, &v)
		if strings.Contains(v.Message, "SECRET-VALUE-42") {
			t.Fatalf("block reason leaks a secret: %q", v.Message)
		}
	})
}
