package rawjson_test

import (
	"strconv"
	"strings"
)

// chatRequest is a realistic ~2 KB OpenAI chat completion request, laid out
// as the OpenAI Python SDK sends it: messages first, model after.
const chatRequest = `{"messages":[{"role":"system","content":"You are a helpful assistant for Acme Corp. ` +
	`Answer concisely, cite the knowledge base article ids you used, and never reveal internal ` +
	`pricing. If you are unsure, say so and offer to open a support ticket."},` +
	`{"role":"user","content":"Hi! My order #48213 still shows \"processing\" after 6 days. ` +
	`Can you check what is going on?\nThanks, Zoë"},` +
	`{"role":"assistant","content":null,"tool_calls":[{"id":"call_9a8b7c6d5e4f","type":"function",` +
	`"function":{"name":"lookup_order","arguments":"{\"order_id\":\"48213\",\"include_history\":true}"}}]},` +
	`{"role":"tool","tool_call_id":"call_9a8b7c6d5e4f","content":"{\"status\":\"processing\",` +
	`\"warehouse\":\"FRA-2\",\"history\":[{\"ts\":\"2024-08-01T10:12:00Z\",\"event\":\"created\"},` +
	`{\"ts\":\"2024-08-02T08:40:00Z\",\"event\":\"payment_confirmed\"},{\"ts\":\"2024-08-03T16:05:00Z\",` +
	`\"event\":\"backorder\",\"note\":\"item SKU-1182 out of stock\"}]}"},` +
	`{"role":"assistant","content":"Your order is waiting for SKU-1182, which is on backorder at our ` +
	`Frankfurt warehouse. I can split the shipment so the other items ship today, or wait for the ` +
	`full order. Which do you prefer?"},` +
	`{"role":"user","content":"Please split it \u2014 ship what you have. Also, can I change the ` +
	`delivery address to Musterstraße 12, 10115 Berlin?"}],` +
	`"model":"gpt-4o-2024-08-06","stream":true,"stream_options":{"include_usage":true},` +
	`"temperature":0.2,"top_p":1,"max_tokens":1024,"n":1,"user":"user-7f3a9c",` +
	`"tools":[{"type":"function","function":{"name":"lookup_order","description":"Look up an order by id",` +
	`"parameters":{"type":"object","properties":{"order_id":{"type":"string"},` +
	`"include_history":{"type":"boolean"}},"required":["order_id"]}}},` +
	`{"type":"function","function":{"name":"split_shipment","description":"Split an order into shipments",` +
	`"parameters":{"type":"object","properties":{"order_id":{"type":"string"},` +
	`"address":{"type":"string"}},"required":["order_id"]}}}],"tool_choice":"auto",` +
	`"metadata":{"tenant":"acme","trace":"4bf92f3577b34da6a3ce929d0e0e4736"}}`

// chatChunk is a streamed chat.completion.chunk as OpenAI sends it.
const chatChunk = `{"id":"chatcmpl-A1b2C3d4E5f6G7h8I9j0","object":"chat.completion.chunk","created":1723456789,` +
	`"model":"gpt-4o-2024-08-06","system_fingerprint":"fp_x","choices":[{"index":0,"delta":{"content":"Hello"},` +
	`"logprobs":null,"finish_reason":null}]}`

// bigRequest returns a ~64 KB request: a long conversation of about n bytes.
func bigRequest(n int) []byte {
	var b strings.Builder
	b.WriteString(`{"model":"gpt-4o","messages":[`)
	for i := 0; b.Len() < n-200; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		role := "user"
		if i%2 == 1 {
			role = "assistant"
		}
		b.WriteString(`{"role":"` + role + `","content":"Message ` + strconv.Itoa(i) +
			`: the quick brown fox jumps over the lazy dog \"quoted\" and café ✓ ` +
			strings.Repeat("lorem ipsum dolor sit amet ", 8) + `"}`)
	}
	b.WriteString(`],"stream":true,"temperature":0.7}`)
	return []byte(b.String())
}
