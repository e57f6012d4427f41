//go:build !race

package usage_test

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"testing"

	"gw/edge/usage"
)

// TestTransportCopiesBatchWithoutBuffer: a 40 KB batch goes out through
// the exporters' transport without net/http's 32 KB copy buffer per
// request (the default transport's 4 KB write buffer hands the body's
// rest to the connection's ReadFrom, which allocates one). Not under
// -race, which allocates for its own bookkeeping and drops pooled buffers.
func TestTransportCopiesBatchWithoutBuffer(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
	}))
	defer srv.Close()
	body := bytes.Repeat([]byte("x"), 40<<10)
	perRequest := func(tr *http.Transport) uint64 {
		defer tr.CloseIdleConnections()
		c := &http.Client{Transport: tr}
		send := func() {
			resp, err := c.Post(srv.URL, "application/x-ndjson", bytes.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		for range 5 {
			send() // the connection and its buffers
		}
		const n = 50
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for range n {
			send()
		}
		runtime.ReadMemStats(&after)
		return (after.TotalAlloc - before.TotalAlloc) / n
	}
	def := perRequest(http.DefaultTransport.(*http.Transport).Clone())
	ours := perRequest(usage.Transport())
	t.Logf("bytes allocated per request (client and server): default transport %d, usage.Transport %d", def, ours)
	if ours >= 16<<10 {
		t.Fatalf("usage.Transport allocates %d B per 40 KB batch (default transport %d): a 32 KB copy buffer per request is back", ours, def)
	}
}
