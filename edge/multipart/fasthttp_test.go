package multipart

import (
	"bufio"
	"bytes"
	"io"
	"net/http"
	"testing"

	"github.com/valyala/fasthttp"
)

// fasthttp writes a request body stream with WriteTo, straight from the
// Reader's buffer, for both a fixed Content-Length and chunked encoding.
var _ fasthttp.BodyWriterTo = (*Reader)(nil)

// TestFasthttpRequest sends the output as a fasthttp request body, with
// the exact Content-Length from OutputSize and chunked, and reads back
// what went on the wire.
func TestFasthttpRequest(t *testing.T) {
	in, ctype := build(t, testBoundary, file("file", "a.wav", payload(200<<10, 12)), text("model", "alias"), text("prompt", "p"))
	want, _ := build(t, testBoundary, file("file", "a.wav", payload(200<<10, 12)), text("model", "upstream-model"), text("prompt", "p"))
	for _, chunked := range []bool{false, true} {
		r, err := Acquire(bytes.NewReader(in), []byte(ctype), Limits{})
		if err != nil {
			t.Fatal(err)
		}
		if err := r.Prepare("model"); err != nil {
			t.Fatal(err)
		}
		if _, err := r.Replace("model", []byte("upstream-model")); err != nil {
			t.Fatal(err)
		}
		size := int(r.OutputSize(int64(len(in))))
		if chunked {
			size = -1
		}
		var req fasthttp.Request
		req.Header.SetMethod("POST")
		req.SetRequestURI("http://upstream/v1/audio/transcriptions")
		req.Header.SetContentType(ctype)
		req.SetBodyStream(r, size)
		var wire bytes.Buffer
		bw := bufio.NewWriter(&wire)
		if err := req.Write(bw); err != nil {
			t.Fatalf("chunked=%v: %v", chunked, err)
		}
		bw.Flush()
		Release(r)

		// Read back with net/http: fasthttp's own reader would parse and
		// re-serialize the multipart form.
		hr, err := http.ReadRequest(bufio.NewReader(&wire))
		if err != nil {
			t.Fatalf("chunked=%v: cannot read the request back: %v", chunked, err)
		}
		body, err := io.ReadAll(hr.Body)
		if err != nil {
			t.Fatalf("chunked=%v: cannot read the body back: %v", chunked, err)
		}
		if !bytes.Equal(body, want) {
			t.Fatalf("chunked=%v: body differs (got %d bytes, want %d)", chunked, len(body), len(want))
		}
		if isChunked := len(hr.TransferEncoding) == 1 && hr.TransferEncoding[0] == "chunked"; isChunked != chunked {
			t.Fatalf("chunked=%v: Transfer-Encoding %q", chunked, hr.TransferEncoding)
		}
		if !chunked && hr.ContentLength != int64(len(want)) {
			t.Fatalf("Content-Length %d; want %d", hr.ContentLength, len(want))
		}
	}
}
