package gemini

import (
	"bytes"
	"os"
	"strings"
	"syscall"
	"testing"

	"gw/sse"
	"gw/sse/chatchunk"
	"gw/sse/respconv"
	"gw/sse/transcode"
)

// BenchmarkStreamEvent: one Gemini SSE event (already framed) decoded and
// transcoded into chat chunks, per event of the recorded text fixture.
func BenchmarkStreamEvent(b *testing.B) {
	evs := readEvents(b, "../testdata/gemini_stream_text.sse")
	s := AcquireToChatStream([]byte("alias"))
	defer ReleaseToChatStream(s)
	dst := make([]byte, 0, 16<<10)
	n := 0
	for _, e := range evs {
		n += len(e)
	}
	b.SetBytes(int64(n / len(evs)))
	alias := []byte("alias")
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if i%len(evs) == 0 {
			s.Reset(alias)
		}
		dst, _ = s.Event(dst[:0], nil, evs[i%len(evs)])
	}
}

// BenchmarkStreamEventToolCall: the recorded function call event (a 1 KB
// thought signature carried into the tool-call id).
func BenchmarkStreamEventToolCall(b *testing.B) {
	evs := readEvents(b, "../testdata/gemini_stream_function_call.sse")
	s := AcquireToChatStream([]byte("alias"))
	defer ReleaseToChatStream(s)
	dst := make([]byte, 0, 16<<10)
	b.SetBytes(int64(len(evs[0])))
	alias := []byte("alias")
	b.ReportAllocs()
	for b.Loop() {
		s.Reset(alias)
		dst, _ = s.Event(dst[:0], nil, evs[0])
	}
}

var benchChat = []byte(`{"model":"gemini","messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"What is the weather in Oslo and the time there?"},{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Oslo\"}"}}]},{"role":"tool","tool_call_id":"call_1","content":"{\"temp_c\":4}"}],"tools":[{"type":"function","function":{"name":"get_weather","description":"Current weather","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}}],"temperature":0.2,"max_tokens":512,"stream":true}`)

// BenchmarkChatRequestToGemini: a chat request with a tool round trip.
func BenchmarkChatRequestToGemini(b *testing.B) {
	dst := make([]byte, 0, 4096)
	b.SetBytes(int64(len(benchChat)))
	b.ReportAllocs()
	for b.Loop() {
		var err error
		if dst, err = ChatRequestToGemini(dst[:0], benchChat); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecodeTranscode: the recorded text stream read from its bytes
// (SSE framing, CRLF) and transcoded, End included, for each caller format:
// chat callers get ToChatStream's chunks; Messages and Responses callers get
// them through the edge's second stage (msgconv, respconv), fed one frame
// payload at a time as edge/stream.go does; the _sink runs hand the second
// stage ToChatStream's chunks directly (SetSink), as edge/stream_direct.go
// does. ns/event (per Gemini event) is the figure to hold under 1 µs.
func BenchmarkDecodeTranscode(b *testing.B) {
	raw, err := os.ReadFile("../testdata/gemini_stream_text.sse")
	if err != nil {
		b.Fatal(err)
	}
	for _, d := range goldenDirections {
		b.Run(strings.TrimPrefix(d.name, "gemini_to_"), func(b *testing.B) {
			benchDecodeTranscode(b, raw, d.caller, false)
		})
		if d.caller != nil {
			b.Run(strings.TrimPrefix(d.name, "gemini_to_")+"_sink", func(b *testing.B) {
				benchDecodeTranscode(b, raw, d.caller, true)
			})
		}
	}
}

func benchDecodeTranscode(b *testing.B, raw []byte, caller callerStage, sink bool) {
	s := AcquireToChatStream(nil)
	defer ReleaseToChatStream(s)
	var conv transcode.Stream
	if caller != nil {
		c, release := caller()
		defer release()
		conv = c
	}
	alias := []byte("alias")
	chat := make([]byte, 0, 16<<10)
	dst := make([]byte, 0, 16<<10)
	var br bytes.Reader
	events := 0
	// feed hands the chat frames in chat to the caller stage (or keeps them).
	feed := func(out []byte) []byte {
		if conv == nil {
			return append(out, chat...)
		}
		for f := chat; len(f) > 0; {
			end := bytes.Index(f, frameSep)
			if end < 0 {
				end = len(f)
			}
			data := bytes.TrimPrefix(f[:end], dataPrefix)
			f = f[min(end+len(frameSep), len(f)):]
			out, _ = conv.Event(out, nil, data)
			if sse.IsDone(data) {
				out = conv.End(out)
			}
		}
		return out
	}
	b.SetBytes(int64(len(raw)))
	b.ReportAllocs()
	cpu0 := cpuTime(b)
	for b.Loop() {
		br.Reset(raw)
		rd := sse.AcquireReader(&br)
		s.Reset(alias)
		if conv != nil {
			conv.Reset(alias)
			if r, ok := conv.(*respconv.ChatToResponses); ok {
				r.SetRequest(nil)
			}
		}
		out := dst[:0]
		if sink {
			s.SetSink(conv.(chatchunk.Sink))
			for {
				ev, err := rd.Next()
				if err != nil {
					break
				}
				out, _ = s.Event(out, ev.Name, ev.Data)
				events++
			}
			dst = conv.End(s.End(out))
			sse.ReleaseReader(rd)
			continue
		}
		for {
			ev, err := rd.Next()
			if err != nil {
				break
			}
			chat, _ = s.Event(chat[:0], ev.Name, ev.Data)
			out = feed(out)
			events++
		}
		chat = s.End(chat[:0])
		dst = feed(out)
		sse.ReleaseReader(rd)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(events), "ns/event")
	b.ReportMetric(float64(cpuTime(b)-cpu0)/float64(events), "cpu-ns/event")
}

// cpuTime is the process's CPU time (user + system) in nanoseconds. On a
// shared machine the wall-clock ns/event counts the time other processes
// hold the core; cpu-ns/event (the benchmark is the only busy goroutine and
// allocates nothing, so the process's CPU is its CPU) mostly does not.
func cpuTime(b *testing.B) int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatalf("cannot read the CPU time: %v", err)
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

var (
	frameSep   = []byte("\n\n")
	dataPrefix = []byte("data: ")
)
