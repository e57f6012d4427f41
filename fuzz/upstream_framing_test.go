package fuzz

import (
	"bufio"
	"bytes"
	"testing"

	"github.com/valyala/fasthttp"

	"gw/adapters/upstream"
)

// FuzzUpstreamRequestLeft: RequestLeft never panics on any bytes, and over
// every prefix of a request written by fasthttp's client (the only writer
// whose bytes it reads) it answers either "cannot tell" or exactly how many
// bytes are still to come, and 0 for the whole request.
func FuzzUpstreamRequestLeft(f *testing.F) {
	f.Add([]byte("POST / HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc"), "POST", []byte(`{"model":"m"}`), "X-Key", "v")
	f.Add([]byte("GET / HTTP/1.1\r\n\r\n"), "GET", []byte(nil), "Content-Length", "7")
	f.Add([]byte("POST / HTTP/1.1\r\ntransfer-encoding: chunked\r\n\r\n"), "PUT", []byte("x"), "Transfer-Encoding", "chunked")
	f.Fuzz(func(t *testing.T, raw []byte, method string, body []byte, name, value string) {
		if l := upstream.RequestLeft(raw); l < -1 {
			t.Fatalf("RequestLeft(%q) = %d", raw, l)
		}
		var req fasthttp.Request
		req.SetRequestURI("http://upstream.test/v1/chat/completions")
		if method != "" {
			req.Header.SetMethod(method)
		}
		if name != "" {
			req.Header.Set(name, value)
		}
		req.SetBody(body)
		var buf bytes.Buffer
		w := bufio.NewWriter(&buf)
		if err := req.Write(w); err != nil || w.Flush() != nil {
			return
		}
		full := buf.Bytes()
		// A caller-set framing header can make fasthttp write a message
		// that contradicts itself; then only safety is checked.
		lname := bytes.ToLower([]byte(name))
		consistent := !bytes.Contains(lname, []byte("content-length")) && !bytes.Contains(lname, []byte("transfer-encoding"))
		for k := 0; k <= len(full); k++ {
			l := upstream.RequestLeft(full[:k])
			// Safe: never "complete" before the last byte (the held write
			// would wait for the next one); exact on consistent messages.
			if l != -1 && k+l < len(full) {
				t.Fatalf("RequestLeft of %d of %d bytes of %q = %d: says complete too early", k, len(full), full, l)
			}
			if consistent && l != -1 && l != len(full)-k {
				t.Fatalf("RequestLeft of %d of %d bytes of %q = %d; want -1 or %d", k, len(full), full, l, len(full)-k)
			}
		}
		if l := upstream.RequestLeft(full); consistent && full[0] >= 'A' && full[0] <= 'Z' && l != 0 {
			t.Fatalf("RequestLeft of the whole request %q = %d; want 0", full, l)
		}
	})
}
