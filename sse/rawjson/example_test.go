package rawjson_test

import (
	"fmt"

	"gw/sse/rawjson"
)

func ExampleSetString() {
	chunk := []byte(`{"id":"c1","model":"gpt-4o-2024-08-06","choices":[{"delta":{"content":"Hi"}}]}`)
	dst := make([]byte, 0, 256) // reused per stream
	dst, err := rawjson.SetString(dst[:0], chunk, "model", "my-alias")
	fmt.Println(string(dst), err)
	// Output: {"id":"c1","model":"my-alias","choices":[{"delta":{"content":"Hi"}}]} <nil>
}

func ExampleScanTop() {
	body := []byte(`{"messages":[{"role":"user","content":"hi"}],"model":"gpt-4o","stream":true,` +
		`"stream_options":{"include_usage":true}}`)
	keys := []string{"model", "stream", "stream_options", "messages"}
	vals := make([][]byte, len(keys))
	if err := rawjson.ScanTop(body, keys, vals); err != nil {
		panic(err)
	}
	usage, _, _ := rawjson.Get(vals[2], "include_usage")
	fmt.Println(rawjson.StringEquals(vals[0], "gpt-4o"), rawjson.KindOf(vals[1]), rawjson.KindOf(usage))
	// Output: true true true
}

func ExampleForEachElem() {
	body := []byte(`{"messages":[{"role":"system","content":"s"},{"role":"user","content":"u"}]}`)
	msgs, _, _ := rawjson.Get(body, "messages")
	err := rawjson.ForEachElem(msgs, func(i int, msg []byte, kind rawjson.Kind) bool {
		role, _, _ := rawjson.Get(msg, "role")
		fmt.Println(i, string(role))
		return true
	})
	fmt.Println(err)
	// Output:
	// 0 "system"
	// 1 "user"
	// <nil>
}

func ExampleRename() {
	body := []byte(`{"max_tokens":100,"max_completion_tokens":5,"model":"o1"}`)
	out, _ := rawjson.Rename(nil, body, "max_tokens", "max_completion_tokens")
	fmt.Println(string(out))
	// Output: {"max_completion_tokens":100,"model":"o1"}
}

func ExampleParseInt() {
	body := []byte(`{"max_tokens":100000}`)
	raw, _, _ := rawjson.Get(body, "max_tokens")
	if n, ok := rawjson.ParseInt(raw); ok && n > 4096 {
		body, _ = rawjson.Set(nil, body, "max_tokens", []byte("4096"))
	}
	fmt.Println(string(body))
	// Output: {"max_tokens":4096}
}
