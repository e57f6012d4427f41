package mcp

import (
	"bytes"
	"encoding/json"
	"strconv"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"gw/edge/guard"
)

// unmarshalNumbers decodes b keeping numbers as their literal text, so a
// guardrail judges the number as it was sent and it is relayed unchanged.
func unmarshalNumbers(b []byte, v *any) error {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	return d.Decode(v)
}

// walkArgs adds every value of *args to the guardrail texts (strings
// rewritable, object keys and numbers judged but fixed); applyMasks later
// replaces masked strings in place.
func (tc *toolCall) walkArgs(args *any, role guard.Role, part guard.Part) {
	tc.walk(*args, role, part, func(s string) { *args = s })
}

func (tc *toolCall) walk(v any, role guard.Role, part guard.Part, set func(string)) {
	switch x := v.(type) {
	case string:
		tc.add(guard.Text{Role: role, Part: part, Data: []byte(x)}, set)
	case json.Number:
		tc.add(guard.Text{Role: role, Part: guard.PartToolNumber, Data: []byte(x)}, nil)
	case float64:
		tc.add(guard.Text{Role: role, Part: guard.PartToolNumber, Data: strconv.AppendFloat(nil, x, 'g', -1, 64)}, nil)
	case map[string]any:
		for k, val := range x {
			tc.add(guard.Text{Role: role, Part: guard.PartToolKey, Data: []byte(k)}, nil)
			tc.walk(val, role, part, func(s string) { x[k] = s })
		}
	case []any:
		for i, val := range x {
			tc.walk(val, role, part, func(s string) { x[i] = s })
		}
	}
}

func (tc *toolCall) add(t guard.Text, set func(string)) {
	tc.g.AddText(t, set == nil, true)
	tc.setters = append(tc.setters, set)
}

// applyMasks writes the masked texts back into the values they came from.
func (tc *toolCall) applyMasks() {
	texts := tc.g.Texts()
	for i, set := range tc.setters {
		if set != nil && i < len(texts) && tc.g.Changed(i) {
			set(string(texts[i].Data))
		}
	}
}

// resultTexts adds a tool result's texts: each text content block, the
// text of embedded text resources, and every structuredContent value.
func (tc *toolCall) resultTexts(res *sdk.CallToolResult) {
	for _, ct := range res.Content {
		switch x := ct.(type) {
		case *sdk.TextContent:
			tc.add(guard.Text{Role: guard.RoleTool, Part: guard.PartToolResult, Data: []byte(x.Text)}, func(s string) { x.Text = s })
		case *sdk.EmbeddedResource:
			if r := x.Resource; r != nil && r.Text != "" {
				tc.add(guard.Text{Role: guard.RoleTool, Part: guard.PartToolResult, Data: []byte(r.Text)}, func(s string) { r.Text = s })
			}
		}
	}
	if res.StructuredContent != nil {
		if s, ok := res.StructuredContent.(string); ok {
			tc.add(guard.Text{Role: guard.RoleTool, Part: guard.PartToolResult, Data: []byte(s)}, func(s string) { res.StructuredContent = s })
			return
		}
		tc.walk(res.StructuredContent, guard.RoleTool, guard.PartToolResult, nil)
	}
}
