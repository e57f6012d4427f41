package usagetest

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"io"
	"net/http"
	"sync"
	"testing"
)

// ControlPlane is a TLS server that requires and verifies a client
// certificate (mutual TLS) and serves POST /dp/telemetry. Answer decides
// each response (nil: 200); accepted batches are deduplicated by batch ID
// as the control plane does.
type ControlPlane struct {
	URL string

	mu       sync.Mutex
	Answer   func(try int, batchID string) (status int, body string)
	tries    int
	ids      []string
	accepted map[string][]string // batch ID → lines
}

// StartControlPlane starts the server with pki's server certificate.
func StartControlPlane(tb testing.TB, pki *PKI) *ControlPlane {
	tb.Helper()
	cert, err := tls.LoadX509KeyPair(pki.ServerCert, pki.ServerKey)
	if err != nil {
		tb.Fatal(err)
	}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}, ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: pki.CA})
	if err != nil {
		tb.Fatal(err)
	}
	cp := &ControlPlane{URL: "https://" + ln.Addr().String(), accepted: map[string][]string{}}
	srv := &http.Server{Handler: cp, ErrorLog: nil}
	go srv.Serve(ln)
	tb.Cleanup(func() { srv.Close() })
	return cp
}

func (cp *ControlPlane) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("X-Gw-Usage-Batch-Dedup", "1")
	if r.Method != http.MethodPost || r.URL.Path != "/dp/telemetry" || len(r.TLS.PeerCertificates) == 0 {
		http.Error(w, `{"code":"NOT_FOUND"}`, http.StatusNotFound)
		return
	}
	id := r.Header.Get("X-Gw-Usage-Batch-Id")
	body, _ := io.ReadAll(r.Body)
	cp.mu.Lock()
	cp.tries++
	cp.ids = append(cp.ids, id)
	try, answer := cp.tries, cp.Answer
	cp.mu.Unlock()
	if answer != nil {
		if status, msg := answer(try, id); status != 0 && status != 200 {
			http.Error(w, msg, status)
			return
		}
	}
	var lines []string
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	cp.mu.Lock()
	cp.accepted[id] = lines // a resent batch replaces itself: stored once
	cp.mu.Unlock()
	w.WriteHeader(http.StatusOK)
}

// BatchIDs returns the batch ID of every request, in order.
func (cp *ControlPlane) BatchIDs() []string {
	cp.mu.Lock()
	defer cp.mu.Unlock()
	return append([]string(nil), cp.ids...)
}

// Events returns the accepted records, one NDJSON line each.
func (cp *ControlPlane) Events() []string {
	cp.mu.Lock()
	defer cp.mu.Unlock()
	var out []string
	for _, l := range cp.accepted {
		out = append(out, l...)
	}
	return out
}
