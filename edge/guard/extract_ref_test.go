package guard

import (
	"bytes"
	"encoding/json"
	"slices"
	"testing"

	"gw/sse/rawjson"
)

// chatRequestRef is the chat request walk before the one-pass Cursor
// (rawjson.Get, ForEachElem, ForEachKey): the reference the Cursor walk
// must agree with.
func (x *Extractor) chatRequestRef() error {
	msgs, k, ok := rawjson.Get(x.body, "messages")
	if !ok || k != rawjson.Array {
		return nil
	}
	return rawjson.ForEachElem(msgs, func(i int, m []byte, mk rawjson.Kind) bool {
		if mk != rawjson.Object {
			return true
		}
		var role, content, refusal, reasoning, toolCalls, fnCall []byte
		var ck rawjson.Kind
		_ = rawjson.ForEachKey(m, func(key, val []byte, vk rawjson.Kind) bool {
			switch {
			case rawjson.StringEquals(key, "role"):
				role = val
			case rawjson.StringEquals(key, "content"):
				content, ck = val, vk
			case rawjson.StringEquals(key, "refusal") && vk == rawjson.String:
				refusal = val
			case (rawjson.StringEquals(key, "reasoning_content") || rawjson.StringEquals(key, "reasoning")) && vk == rawjson.String:
				reasoning = val
			case rawjson.StringEquals(key, "tool_calls") && vk == rawjson.Array:
				toolCalls = val
			case rawjson.StringEquals(key, "function_call") && vk == rawjson.Object:
				fnCall = val
			}
			return true
		})
		r := RoleUser
		if rawjson.KindOf(role) == rawjson.String {
			r = roleOf(role)
		}
		x.turn(i, r)
		part := PartContent
		if r == RoleTool {
			part = PartToolResult
		}
		x.set(r, part, false, i)
		if reasoning != nil {
			x.part = PartReasoning
			x.str(reasoning)
			x.part = part
		}
		if content != nil {
			if r == RoleTool && ck == rawjson.String {
				x.nestedPayload(content, PartToolResult)
			} else {
				x.content(content, ck)
			}
		}
		if refusal != nil {
			x.part = PartContent
			x.str(refusal)
		}
		if toolCalls != nil {
			x.toolCalls(toolCalls)
		}
		if fnCall != nil {
			if a, ak, ok := rawjson.Get(fnCall, "arguments"); ok && ak == rawjson.String {
				x.nestedPayload(a, PartToolArguments)
			}
		}
		return true
	})
}

// extractChatRef is Extract(ChatRequest) with the reference walk.
func (x *Extractor) extractChatRef(e *Exec, body []byte) error {
	x.body, x.spans, x.arena, x.nested, x.nests = body, x.spans[:0], x.arena[:0], x.nested[:0], x.nests[:0]
	x.doc, x.docN, x.lastAsst = body, -1, -1
	e.clearTexts()
	if rawjson.KindOf(body) != rawjson.Object {
		return ErrBody
	}
	err := x.chatRequestRef()
	x.emit(e)
	return err
}

// chatRefSeeds are chat requests for the agreement test and fuzz target.
var chatRefSeeds = []string{
	`{"model":"m","messages":[{"role":"system","content":"s"},{"content":"c","role":"assistant","reasoning":"r","refusal":"no"},{"role":"tool","content":"{\"a\":[1,\"x\"]}"},{"role":"user","content":[{"type":"text","text":"t\u00e9"},"p"]}]}`,
	`{"m\u0065ssages":[{"r\u006fle":"assist\u0061nt","tool_calls":[{"function":{"arguments":"{\"k\":true}"}}],"function_call":{"arguments":"[2]"}},1,null,{"role":"developer","content":"a\\b"}]}`,
	`{"messages":[{"role":"user","content":"a"}],"messages":[{"role":"user","content":"b"}]}`,
	`{"messages":[{"role":"user","content":"a"}],"messages":{}}`,
	`{"messages":[],"x":[{"messages":[{"content":"no"}]}]}`,
	` {"messages" : [ { "role" : "tool" , "role" : "user" , "content" : "x" , "content" : "y" } ] } `,
}

// chatAgree checks the Cursor walk against the reference on body.
func chatAgree(t *testing.T, body []byte) {
	var e1, e2 Exec
	var x1, x2 Extractor
	err1 := x1.Extract(&e1, ChatRequest, body)
	err2 := x2.extractChatRef(&e2, body)
	if (err1 == nil) != (err2 == nil) {
		t.Fatalf("%s: error %v, reference %v", body, err1, err2)
	}
	if d1, d2 := describe(&e1), describe(&e2); d1 != d2 {
		t.Fatalf("%s:\ngot:\n%sreference:\n%s", body, d1, d2)
	}
	if !slices.Equal(x1.spans, x2.spans) || !bytes.Equal(x1.arena, x2.arena) || !bytes.Equal(x1.nested, x2.nested) ||
		!slices.Equal(x1.nests, x2.nests) || x1.lastAsst != x2.lastAsst {
		t.Fatalf("%s: spans differ from the reference", body)
	}
}

func TestChatWalkAgreesWithReference(t *testing.T) {
	for _, s := range chatRefSeeds {
		chatAgree(t, []byte(s))
	}
}

// FuzzChatWalk: on any valid JSON body the one-pass chat walk finds the
// same texts, spans and latest turn as the ForEachElem/ForEachKey walk.
func FuzzChatWalk(f *testing.F) {
	for _, s := range chatRefSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		if !json.Valid(body) {
			return
		}
		chatAgree(t, body)
	})
}
