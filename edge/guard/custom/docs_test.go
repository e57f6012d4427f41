package custom_test

import (
	"context"
	"os"
	"strings"
	"testing"

	"gw/edge/guard"
	"gw/edge/guard/custom"
)

// TestDocExamples runs the examples of docs/GUARDRAILS_CUSTOM.md as
// written, so the documentation cannot drift from the contract.
func TestDocExamples(t *testing.T) {
	doc, err := os.ReadFile("../../../docs/GUARDRAILS_CUSTOM.md")
	if err != nil {
		t.Fatal(err)
	}
	var scripts []string
	for _, block := range strings.Split(string(doc), "```js\n")[1:] {
		src, _, _ := strings.Cut(block, "```")
		if strings.Contains(src, "export function") || strings.Contains(src, "export async function") {
			scripts = append(scripts, src)
		}
	}
	// The YAML quick example.
	if _, y, ok := strings.Cut(string(doc), "    script: |\n"); ok {
		y, _, _ = strings.Cut(y, "```")
		scripts = append(scripts, strings.ReplaceAll(y, "\n      ", "\n")[6:])
	}
	text := func(role guard.Role, s string) guard.Text { return guard.Text{Role: role, Data: []byte(s)} }
	cases := []struct {
		marker string // picks the example
		phase  guard.Phase
		model  string
		texts  []guard.Text
		action guard.Action
		masked string // Masks[0] for Rewrite, Message for Block
	}{
		{"banned = [", guard.Input, "m", []guard.Text{text(guard.RoleUser, "About Project-Falcon")}, guard.Block, "Internal project names are not allowed."},
		{"banned = [", guard.Output, "m", []guard.Text{text(guard.RoleAssistant, "fine")}, guard.Allow, ""},
		{`\bfalcon\b`, guard.Output, "m", []guard.Text{text(guard.RoleAssistant, "the Falcon lands")}, guard.Block, "This topic is not allowed here."},
		{`\bfalcon\b`, guard.Input, "m", []guard.Text{text(guard.RoleUser, "falconry")}, guard.Allow, ""},
		{"TCK-", guard.Input, "m", []guard.Text{text(guard.RoleSystem, "none"), text(guard.RoleUser, "see TCK-123456 and TCK-654321")}, guard.Rewrite, "see [TICKET] and [TICKET]"},
		{"public-", guard.Input, "public-mini", []guard.Text{text(guard.RoleUser, strings.Repeat("x", 20001))}, guard.Block, "Message too long for public models."},
		{"public-", guard.Input, "internal", []guard.Text{text(guard.RoleUser, strings.Repeat("x", 20001))}, guard.Allow, ""},
		{"CANARY", guard.Output, "m", []guard.Text{text(guard.RoleAssistant, "leak c4n4ry-77 here")}, guard.Block, "The answer contained a canary value."},
		{"password", guard.Input, "m", []guard.Text{text(guard.RoleUser, "my password: hunter2")}, guard.Block, "Do not send passwords."},
	}
	for _, tc := range cases {
		var src string
		for _, s := range scripts {
			if strings.Contains(s, tc.marker) {
				src = s
			}
		}
		if src == "" {
			t.Fatalf("no example containing %q in the doc", tc.marker)
		}
		c := newCheckerWith(t, guardrail(src, 5000*slowdown, 16<<20, map[string]string{"CANARY": "c4n4ry-77"}))
		var v guard.Verdict
		if err := c.Check(context.Background(), &guard.Request{Phase: tc.phase, Model: tc.model, Texts: tc.texts}, &v); err != nil {
			t.Fatalf("%s: %v", tc.marker, err)
		}
		got := v.Message
		if v.Action == guard.Rewrite {
			got = string(v.Masks[0].Data)
			if len(v.Masks) != 1 || v.Masks[0].Index != 1 || v.Rule != custom.DefaultRule {
				t.Fatalf("%s: masks %+v", tc.marker, v.Masks)
			}
		}
		if v.Action != tc.action || got != tc.masked {
			t.Fatalf("%s: got %d %q; want %d %q", tc.marker, v.Action, got, tc.action, tc.masked)
		}
	}
}
