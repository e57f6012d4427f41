package msgconv_test

import (
	"sync/atomic"
	"testing"

	"gw/sse"
	"gw/sse/msgconv"
	"gw/sse/rawjson"
	"gw/sse/transcode"
)

// Sink keeps benchmark results alive.
var Sink atomic.Int64

var benchChatRequest = []byte(`{"model":"gpt-4o","stream":true,"stream_options":{"include_usage":true},"max_completion_tokens":512,
 "messages":[
  {"role":"developer","content":"You are a concise assistant. Answer in metric units and cite the tool output."},
  {"role":"user","content":[{"type":"text","text":"Weather in Oslo?"},
                            {"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="}}]},
  {"role":"assistant","content":null,"tool_calls":[{"id":"call_a1","type":"function",
     "function":{"name":"get_weather","arguments":"{\"city\":\"Oslo\",\"unit\":\"celsius\"}"}}]},
  {"role":"tool","tool_call_id":"call_a1","content":"{\"temp_c\":4,\"sky\":\"overcast\"}"},
  {"role":"assistant","content":"It is 4 °C and overcast in Oslo."},
  {"role":"user","content":"And tomorrow?"}],
 "tools":[{"type":"function","function":{"name":"get_weather","description":"Current weather",
   "parameters":{"type":"object","properties":{"city":{"type":"string"},"unit":{"type":"string","enum":["celsius","fahrenheit"]}},"required":["city"]}}}],
 "tool_choice":"auto","temperature":0.2,"user":"u-123"}`)

type benchEvents struct {
	names, datas [][]byte
	bytes        int
}

func loadEvents(b *testing.B, name string) benchEvents {
	evs := parseSSE(b, readFixture(b, name), nil)
	var be benchEvents
	for _, ev := range evs {
		be.names = append(be.names, []byte(ev.Name))
		be.datas = append(be.datas, []byte(ev.Data))
		be.bytes += len(ev.Data)
	}
	return be
}

func reportPerEvent(b *testing.B, events int) {
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*events), "ns/event")
}

// benchStream replays a whole recorded stream per iteration.
func benchStream(b *testing.B, newStream func() transcode.Stream, name string) {
	be := loadEvents(b, name)
	b.ReportAllocs()
	b.SetBytes(int64(be.bytes))
	s := newStream()
	model := []byte("my-alias")
	dst := make([]byte, 0, 64<<10)
	for b.Loop() {
		s.Reset(model)
		out := dst[:0]
		for i := range be.datas {
			out, _ = s.Event(out, be.names[i], be.datas[i])
		}
		out = s.End(out)
		Sink.Add(int64(len(out)))
	}
	reportPerEvent(b, len(be.datas))
}

func BenchmarkMessagesToChatStream(b *testing.B) {
	for _, name := range []string{"anthropic_text.sse", "anthropic_text_then_parallel_tool_use.sse",
		"anthropic_thinking_then_text.sse", "anthropic_tool_use_json.jsonl"} {
		b.Run(name, func(b *testing.B) { benchStream(b, msgconv.NewMessagesToChatStream, name) })
	}
}

func BenchmarkChatToMessagesStream(b *testing.B) {
	for _, name := range []string{"openai_chat_text.sse", "openai_chat_parallel_tool_calls_include_usage.sse",
		"azure_openai_chat_text_content_filter.sse"} {
		b.Run(name, func(b *testing.B) { benchStream(b, msgconv.NewChatToMessagesStream, name) })
	}
}

// The steady state: one text delta, the most common event, against the
// baseline of relaying it unchanged (sse.AppendEvent).
var (
	anthropicDelta = []byte(`{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":" the street"}               }`)
	chatDelta      = []byte(`{"id":"chatcmpl-C4HqHBe4xca0k0EzsCnf1t6V3YFXp","object":"chat.completion.chunk","created":1755137933,"model":"gpt-5-nano-2025-08-07","service_tier":"default","system_fingerprint":null,"choices":[{"index":0,"delta":{"content":" help"},"finish_reason":null}],"obfuscation":"IIfWhAMKFR1KZpb"}`)
)

func BenchmarkTextDelta(b *testing.B) {
	name := []byte("content_block_delta")
	b.Run("relay-baseline", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(anthropicDelta)))
		dst := make([]byte, 0, 4096)
		for b.Loop() {
			Sink.Add(int64(len(sse.AppendEvent(dst[:0], name, anthropicDelta))))
		}
	})
	b.Run("messages-to-chat", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(anthropicDelta)))
		s := msgconv.AcquireMessagesToChatStream([]byte("my-alias"))
		defer msgconv.ReleaseMessagesToChatStream(s)
		dst := make([]byte, 0, 4096)
		for b.Loop() {
			out, _ := s.Event(dst[:0], name, anthropicDelta)
			Sink.Add(int64(len(out)))
		}
	})
	b.Run("chat-to-messages", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(chatDelta)))
		s := msgconv.AcquireChatToMessagesStream([]byte("my-alias"))
		defer msgconv.ReleaseChatToMessagesStream(s)
		dst := make([]byte, 0, 4096)
		for b.Loop() {
			out, _ := s.Event(dst[:0], nil, chatDelta)
			Sink.Add(int64(len(out)))
		}
	})
	b.Run("messages-to-chat-parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(anthropicDelta)))
		b.RunParallel(func(pb *testing.PB) {
			s := msgconv.AcquireMessagesToChatStream([]byte("my-alias"))
			defer msgconv.ReleaseMessagesToChatStream(s)
			dst := make([]byte, 0, 4096)
			for pb.Next() {
				out, _ := s.Event(dst[:0], name, anthropicDelta)
				Sink.Add(int64(len(out)))
			}
		})
	})
}

func BenchmarkRequest(b *testing.B) {
	opt := msgconv.RequestOptions{UpstreamModel: "claude-sonnet-4-5", AutoCache: msgconv.AutoCache5m}
	msgs, err := msgconv.ChatRequestToMessages(nil, benchChatRequest, opt)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("chat-to-messages", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(benchChatRequest)))
		dst := make([]byte, 0, 8192)
		for b.Loop() {
			out, _ := msgconv.ChatRequestToMessages(dst[:0], benchChatRequest, opt)
			Sink.Add(int64(len(out)))
		}
	})
	b.Run("messages-to-chat", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(msgs)))
		dst := make([]byte, 0, 8192)
		for b.Loop() {
			out, _ := msgconv.MessagesRequestToChat(dst[:0], msgs, opt)
			Sink.Add(int64(len(out)))
		}
	})
	b.Run("chat-to-messages-parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(benchChatRequest)))
		b.RunParallel(func(pb *testing.PB) {
			dst := make([]byte, 0, 8192)
			for pb.Next() {
				out, _ := msgconv.ChatRequestToMessages(dst[:0], benchChatRequest, opt)
				Sink.Add(int64(len(out)))
			}
		})
	})
}

func BenchmarkResponse(b *testing.B) {
	anth := []byte(`{"id":"msg_01X","type":"message","role":"assistant","model":"claude-sonnet-4-5-20250929",
 "content":[{"type":"text","text":"Checking the weather for you now."},
            {"type":"tool_use","id":"toolu_01B","name":"get_weather","input":{"city":"Oslo"}}],
 "stop_reason":"tool_use","stop_sequence":null,
 "usage":{"input_tokens":410,"cache_creation_input_tokens":0,"cache_read_input_tokens":1200,"output_tokens":45,"service_tier":"standard"}}`)
	chat, _, err := msgconv.MessagesResponseToChat(nil, anth, []byte("alias"))
	if err != nil {
		b.Fatal(err)
	}
	b.Run("messages-to-chat", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(anth)))
		dst := make([]byte, 0, 4096)
		for b.Loop() {
			out, _, _ := msgconv.MessagesResponseToChat(dst[:0], anth, []byte("alias"))
			Sink.Add(int64(len(out)))
		}
	})
	b.Run("chat-to-messages", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(chat)))
		dst := make([]byte, 0, 4096)
		for b.Loop() {
			out, _, _ := msgconv.ChatResponseToMessages(dst[:0], chat, []byte("alias"))
			Sink.Add(int64(len(out)))
		}
	})
}

// BenchmarkScan compares reading the members of a streamed chunk with
// rawjson.ScanTop against scanKeys (one pass, a switch per member).
func BenchmarkScan(b *testing.B) {
	keys := []string{"choices", "usage", "error", "id"}
	var vals [4][]byte
	b.Run("rawjson.ScanTop", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(chatDelta)))
		for b.Loop() {
			_ = rawjson.ScanTop(chatDelta, keys, vals[:])
		}
	})
	b.Run("scanKeys", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(chatDelta)))
		slot := func(name []byte) int {
			switch string(name) {
			case "choices":
				return 0
			case "usage":
				return 1
			case "error":
				return 2
			case "id":
				return 3
			}
			return -1
		}
		for b.Loop() {
			_ = msgconv.ScanKeys(chatDelta, vals[:], slot)
		}
	})
}
