package sse_test

import (
	"bytes"
	"strings"
	"testing"

	"gw/sse"
)

func TestAppendData(t *testing.T) {
	f := func(data, want string) {
		t.Helper()
		if got := string(sse.AppendData(nil, []byte(data))); got != want {
			t.Fatalf("AppendData(nil, %q): got %q; want %q", data, got, want)
		}
		if got := string(sse.AppendData([]byte("x"), []byte(data))); got != "x"+want {
			t.Fatalf("AppendData(%q, %q): got %q; want %q", "x", data, got, "x"+want)
		}
	}
	f("", "data: \n\n")
	f(`{"a":1}`, "data: {\"a\":1}\n\n")
	f("[DONE]", "data: [DONE]\n\n")
	f("a\nb", "data: a\ndata: b\n\n")
	f("a\r\nb\rc", "data: a\ndata: b\ndata: c\n\n")
	f("a\n", "data: a\ndata: \n\n")
	f("\n", "data: \ndata: \n\n")
	f("\r\n\r\n", "data: \ndata: \ndata: \n\n")
	f("a\n\nb", "data: a\ndata: \ndata: b\n\n")
}

func TestAppendEvent(t *testing.T) {
	f := func(name, data, want string) {
		t.Helper()
		if got := string(sse.AppendEvent(nil, []byte(name), []byte(data))); got != want {
			t.Fatalf("AppendEvent(nil, %q, %q): got %q; want %q", name, data, got, want)
		}
		if got := string(sse.AppendEvent([]byte("x"), []byte(name), []byte(data))); got != "x"+want {
			t.Fatalf("AppendEvent(%q, %q, %q): got %q; want %q", "x", name, data, got, "x"+want)
		}
	}
	f("", "d", "data: d\n\n")
	f("message_stop", `{"type":"message_stop"}`, "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")
	f("ping", "", "event: ping\ndata: \n\n")
	f("e", "a\nb", "event: e\ndata: a\ndata: b\n\n")
	// A line break in the name must not inject fields.
	f("e\ndata: evil", "d", "event: e\ndata: d\n\n")
	f("e\r", "d", "event: e\ndata: d\n\n")
}

func TestAppendDoneComment(t *testing.T) {
	if got := string(sse.AppendDone(nil)); got != "data: [DONE]\n\n" {
		t.Fatalf("AppendDone: got %q", got)
	}
	if got := string(sse.AppendDone([]byte("x"))); got != "xdata: [DONE]\n\n" {
		t.Fatalf("AppendDone: got %q", got)
	}
	f := func(data string, want bool) {
		t.Helper()
		if got := sse.IsDone([]byte(data)); got != want {
			t.Fatalf("IsDone(%q): got %v; want %v", data, got, want)
		}
	}
	f("[DONE]", true)
	f("[DONE] ", false)
	f("", false)
	f("{}", false)

	g := func(text, want string) {
		t.Helper()
		if got := string(sse.AppendComment(nil, []byte(text))); got != want {
			t.Fatalf("AppendComment(nil, %q): got %q; want %q", text, got, want)
		}
	}
	g("", ":\n\n")
	g("ping", ": ping\n\n")
	g("a\nb\r\nc", ": a\n: b\n: c\n\n")
}

func TestWriterRoundTrip(t *testing.T) {
	f := func(name, data string) {
		t.Helper()
		var buf []byte
		buf = sse.AppendComment(buf, []byte("keep-alive"))
		buf = sse.AppendEvent(buf, []byte(name), []byte(data))
		buf = sse.AppendData(buf, []byte(data))
		buf = sse.AppendDone(buf)
		var r sse.Reader
		evs, err := readAll(&r, bytes.NewReader(buf))
		if err != nil {
			t.Fatalf("unexpected error: %s", err)
		}
		if len(evs) != 3 {
			t.Fatalf("got %d events; want 3", len(evs))
		}
		// The writer turns CR and CRLF into LF.
		wantData := strings.ReplaceAll(strings.ReplaceAll(data, "\r\n", "\n"), "\r", "\n")
		if evs[0].Name != name || evs[0].Data != wantData {
			t.Fatalf("AppendEvent(%q, %q) round trip: got %s", name, data, evs[0])
		}
		if evs[1].Name != "" || evs[1].Data != wantData {
			t.Fatalf("AppendData(%q) round trip: got %s", data, evs[1])
		}
		if !sse.IsDone([]byte(evs[2].Data)) {
			t.Fatalf("AppendDone round trip: got %s", evs[2])
		}
		if r.Comments() != 1 {
			t.Fatalf("got %d comments; want 1", r.Comments())
		}
	}
	f("", "")
	f("", "x")
	f("e", "")
	f("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi"}}`)
	f(" lead", " lead")
	f("e", "a\nb\n\nc\n")
	f("e", "a\r\nb\rc")
	f("e", ":colon")

	for name, in := range loadFixtures(t) {
		var r sse.Reader
		evs, err := readAll(&r, bytes.NewReader(in))
		if err != nil {
			t.Fatalf("%s: unexpected error: %s", name, err)
		}
		var out []byte
		for _, ev := range evs {
			out = sse.AppendEvent(out, []byte(ev.Name), []byte(ev.Data))
		}
		evs2, err := readAll(&r, bytes.NewReader(out))
		if err != nil || len(evs2) != len(evs) {
			t.Fatalf("%s: got %d events, error %v; want %d events", name, len(evs2), err, len(evs))
		}
		for i := range evs {
			if evs[i].Name != evs2[i].Name || evs[i].Data != evs2[i].Data {
				t.Fatalf("%s: event #%d: got %s; want %s", name, i, evs2[i], evs[i])
			}
		}
	}
}
