package openai

import (
	"strings"
	"sync"

	"gw/sse/rawjson"
)

// ReasoningMember is where gw and its converters read a chat answer's
// reasoning: choices[].message.reasoning_content, and
// choices[].delta.reasoning_content in streamed chunks.
const ReasoningMember = "reasoning_content"

// ReasoningField returns the member a provider key's response.reasoning_field
// names: the field as written ("reasoning", "thinking"), or the last
// segment of a path to it ("choices[].message.reasoning",
// "delta.reasoning"). "" when the setting is unset or names
// reasoning_content itself, which needs no move.
func ReasoningField(setting string) string {
	f := setting[strings.LastIndexByte(setting, '.')+1:]
	if f == ReasoningMember {
		return ""
	}
	return f
}

type reasoningScratch struct {
	choices []byte
	choice  []byte
	msg     []byte
}

var reasoningPool = sync.Pool{New: func() any { return new(reasoningScratch) }}

// RenameReasoning appends to dst the chat answer or chunk body in which
// member field (ReasoningField's answer) of every choice's message and
// delta is renamed reasoning_content, and reports true; it reports false,
// with dst unchanged, when no choice has it (or body is not a chat answer).
// This is how an OpenAI-compatible upstream that puts reasoning elsewhere
// (`reasoning`, `thinking`) reaches callers, converters and guardrails in
// the one place they read it. dst must not overlap body; steady state does
// not allocate.
func RenameReasoning(dst, body []byte, field string) ([]byte, bool) {
	choices, kind, ok := rawjson.Get(body, "choices")
	if field == "" || !ok || kind != rawjson.Array || !hasReasoningField(choices, field) {
		return dst, false
	}
	sc := reasoningPool.Get().(*reasoningScratch)
	defer reasoningPool.Put(sc)
	arr := append(sc.choices[:0], '[')
	err := rawjson.ForEachElem(choices, func(i int, ch []byte, k rawjson.Kind) bool {
		if i > 0 {
			arr = append(arr, ',')
		}
		if k == rawjson.Object {
			for _, name := range choiceObjects {
				obj, ok := choiceMember(ch, name, field)
				if !ok {
					continue
				}
				m, err := rawjson.Rename(sc.msg[:0], obj, field, ReasoningMember)
				if err != nil {
					break
				}
				sc.msg = m
				c, err := rawjson.Set(sc.choice[:0], ch, name, m)
				if err != nil {
					break
				}
				sc.choice = c
				ch = c
			}
		}
		arr = append(arr, ch...)
		return true
	})
	arr = append(arr, ']')
	sc.choices = arr
	if err != nil {
		return dst, false
	}
	out, err := rawjson.Set(dst, body, "choices", arr)
	if err != nil {
		return dst, false
	}
	return out, true
}

// choiceObjects are the members of a choice that carry the answer: message
// in buffered answers, delta in streamed chunks.
var choiceObjects = [...]string{"message", "delta"}

// choiceMember returns choice member name when it is an object holding
// field.
func choiceMember(choice []byte, name, field string) ([]byte, bool) {
	obj, k, ok := rawjson.Get(choice, name)
	if !ok || k != rawjson.Object {
		return nil, false
	}
	_, _, has := rawjson.Get(obj, field)
	return obj, has
}

func hasReasoningField(choices []byte, field string) bool {
	found := false
	_ = rawjson.ForEachElem(choices, func(_ int, ch []byte, k rawjson.Kind) bool {
		if k != rawjson.Object {
			return true
		}
		for _, name := range choiceObjects {
			if _, ok := choiceMember(ch, name, field); ok {
				found = true
				return false
			}
		}
		return true
	})
	return found
}
