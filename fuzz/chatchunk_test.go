package fuzz

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"gw/sse/chatchunk"
	"gw/sse/rawjson"
)

// ccAccept is respconv's choice rule (index 0 spelled "0", or none).
func ccAccept(index []byte) bool { return index == nil || string(index) == "0" }

// ccReference reads a chunk as the converters' generic readings do: ScanTop
// on the top, each choices element, then the accepted element's delta.
func ccReference(data []byte) (chatchunk.Chunk, bool) {
	var ck chatchunk.Chunk
	var v [6][]byte
	if rawjson.ScanTop(data, []string{"choices", "usage", "error", "id", "created", "model"}, v[:]) != nil {
		return ck, false
	}
	ck.Usage, ck.Error, ck.ID, ck.Created, ck.Model = v[1], v[2], v[3], v[4], v[5]
	var c [3][]byte
	if rawjson.KindOf(v[0]) == rawjson.Array {
		ck.Choices = true
		if rawjson.ForEachElem(v[0], func(_ int, el []byte, k rawjson.Kind) bool {
			if k != rawjson.Object || rawjson.ScanTop(el, []string{"index", "finish_reason", "delta"}, c[:]) != nil {
				return true
			}
			ck.Choice = ccAccept(c[0])
			return !ck.Choice
		}) != nil && !ck.Choice {
			return ck, false
		}
	}
	if ck.Choice {
		ck.Index, ck.Finish = c[0], c[1]
		if rawjson.KindOf(c[2]) == rawjson.Object {
			var d [6][]byte
			if rawjson.ScanTop(c[2], []string{"content", "reasoning_content", "reasoning", "refusal", "tool_calls", "thinking_blocks"}, d[:]) != nil {
				return ck, false
			}
			ck.DeltaObject = true
			ck.Content, ck.ReasoningContent, ck.Reasoning, ck.Refusal, ck.ToolCalls, ck.ThinkingBlocks = d[0], d[1], d[2], d[3], d[4], d[5]
		}
	}
	return ck, true
}

func ccSame(a, b *chatchunk.Chunk) bool {
	eq := func(x, y []byte) bool { return (x == nil) == (y == nil) && bytes.Equal(x, y) }
	return a.Choices == b.Choices && a.Choice == b.Choice && a.DeltaObject == b.DeltaObject &&
		eq(a.ID, b.ID) && eq(a.Created, b.Created) && eq(a.Model, b.Model) && eq(a.Usage, b.Usage) && eq(a.Error, b.Error) &&
		eq(a.Index, b.Index) && eq(a.Finish, b.Finish) && eq(a.Content, b.Content) && eq(a.ReasoningContent, b.ReasoningContent) &&
		eq(a.Reasoning, b.Reasoning) && eq(a.Refusal, b.Refusal) && eq(a.ToolCalls, b.ToolCalls) && eq(a.ThinkingBlocks, b.ThinkingBlocks)
}

// ccCheckToolCall fails unless a tool call element the walk accepted reads
// as ScanTop reads it, level by level.
func ccCheckToolCall(t *testing.T, data []byte, got *chatchunk.ToolCall) {
	t.Helper()
	var v [3][]byte
	var f [2][]byte
	ok := rawjson.ScanTop(data, []string{"index", "id", "function"}, v[:]) == nil
	fn := rawjson.KindOf(v[2]) == rawjson.Object
	if ok && fn {
		ok = rawjson.ScanTop(v[2], []string{"name", "arguments"}, f[:]) == nil
	}
	eq := func(x, y []byte) bool { return (x == nil) == (y == nil) && bytes.Equal(x, y) }
	if !ok || got.Function != fn || !eq(got.Index, v[0]) || !eq(got.ID, v[1]) || !eq(got.Name, f[0]) || !eq(got.Arguments, f[1]) {
		t.Fatalf("tool call walk and reference differ on %q (reference ok %v)\nwalk: %+v", data, ok, got)
	}
}

// FuzzChatChunkWalk: whatever two chunks a Walker reads in a row (the
// second may resume after a prefix repeated from the first), a chunk it
// accepts is read exactly as the level-by-level reference reads it, and
// the reference accepts it too; the same for an input read as one
// tool_calls element; it never panics.
func FuzzChatChunkWalk(f *testing.F) {
	b, err := os.ReadFile("../sse/chatchunk/testdata/seeds.txt")
	if err != nil {
		f.Fatal(err)
	}
	seeds := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	for i, s := range seeds {
		f.Add([]byte(s), []byte(seeds[(i+1)%len(seeds)]))
	}
	f.Add([]byte(`{"index":0,"id":"call_1","type":"function","function":{"name":"f","arguments":"{\"a\":1}"}}`), []byte(`{"function":{"arguments":"x","n\u0061me":"g"},"function":null,"index":1}`))
	f.Fuzz(func(t *testing.T, a, b []byte) {
		var w chatchunk.Walker
		for _, data := range [][]byte{a, b, b} {
			var tc chatchunk.ToolCall
			if w.WalkToolCall(data, &tc) {
				ccCheckToolCall(t, data, &tc)
			}
			var got chatchunk.Chunk
			if !w.Walk(data, &got, ccAccept) {
				continue
			}
			want, ok := ccReference(data)
			if !ok || !ccSame(&got, &want) {
				t.Fatalf("walk and reference differ on %q (reference ok %v)\nwalk: %+v\nref:  %+v", data, ok, got, want)
			}
		}
	})
}
