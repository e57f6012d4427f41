package soak

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/signal"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// fault is what the fake gateway does to one answer.
type fault int

const (
	faultNone     fault = iota
	faultTruncate       // a stream cut before its terminating chunk: the caller's read fails
	faultNoDone         // a stream that ends cleanly without its [DONE]
	faultStatus         // a 503
)

// fakeGW relays each request to the mock (which echoes the model, so no rewrite is
// needed) and damages the answers that plan picks. It counts what it did.
type fakeGW struct {
	mock  string
	plan  func(n int64, stream bool) fault
	delay time.Duration

	n      atomic.Int64
	mu     sync.Mutex
	faults map[fault]int
}

func (g *fakeGW) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Authorization") != "Bearer test-caller-key" {
		http.Error(w, "bad key", http.StatusUnauthorized)
		return
	}
	in, _ := io.ReadAll(r.Body)
	req, _ := http.NewRequest(http.MethodPost, g.mock+"/chat/completions", bytes.NewReader(in))
	for _, h := range []string{"x-mock-chunks", "x-mock-chunk-size"} {
		req.Header.Set(h, r.Header.Get(h))
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	time.Sleep(g.delay)
	stream := bytes.Contains(in, []byte(`"stream":true`))
	f := g.plan(g.n.Add(1), stream)
	g.mu.Lock()
	g.faults[f]++
	g.mu.Unlock()
	switch f {
	case faultStatus:
		http.Error(w, `{"error":{"message":"overloaded"}}`, http.StatusServiceUnavailable)
		return
	case faultNoDone:
		body = bytes.TrimSuffix(body, []byte("data: [DONE]\n\n"))
	case faultTruncate:
		truncate(w, body[:len(body)/2])
		return
	}
	if stream {
		w.Write(body[:10]) // two writes with a flush: net/http then sends it chunked
		w.(http.Flusher).Flush()
		w.Write(body[10:])
		return
	}
	w.Header().Set("Content-Length", fmt.Sprint(len(body)))
	w.Write(body)
}

// truncate writes a chunked 200 with part of the body and closes the connection without
// the terminating chunk, as a gateway whose stream writer dies does.
func truncate(w http.ResponseWriter, part []byte) {
	conn, buf, err := w.(http.Hijacker).Hijack()
	if err != nil {
		panic(err)
	}
	defer conn.Close()
	fmt.Fprintf(buf, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n%x\r\n%s\r\n", len(part), part)
	buf.Flush()
}

func startFake(t *testing.T, plan func(n int64, stream bool) fault, delay time.Duration) (*fakeGW, string) {
	t.Helper()
	g := &fakeGW{mock: startMock(t), plan: plan, delay: delay, faults: map[fault]int{}}
	srv := httptest.NewServer(g)
	t.Cleanup(srv.Close)
	return g, srv.URL + "/v1"
}

func runConfig(base string) Config {
	return Config{Base: base, CallerKey: "test-caller-key", Model: "soak-alias", Concurrency: 8, Requests: 400,
		StreamShare: 0.8, IncludeUsageShare: 0.5, Chunks: 20, ChunkSize: 16, Timeout: 10 * time.Second}
}

// TestSoakRunCleanAndReloads: a faultless gateway gives no broken answer, the mix and the
// counts add up, and SIGHUPs reach the process named.
func TestSoakRunCleanAndReloads(t *testing.T) {
	g, base := startFake(t, func(int64, bool) fault { return faultNone }, time.Millisecond)
	hups := make(chan os.Signal, 1024)
	// Never stopped: a SIGHUP still in flight when the test ends must not kill the binary.
	signal.Notify(hups, syscall.SIGHUP)
	cfg := runConfig(base)
	cfg.ReloadPID, cfg.ReloadEvery = os.Getpid(), 5*time.Millisecond
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if res.Total != 400 || res.OK != 400 || res.Broken != 0 || len(res.Failures) != 0 {
		t.Fatalf("clean run: %+v", res)
	}
	if res.Streamed != 320 || res.Buffered != 80 || res.Status[200] != 400 || len(res.Status) != 1 {
		t.Fatalf("mix or statuses: %+v", res)
	}
	if g.n.Load() != 400 || res.BodyBytes < 320*20*16 {
		t.Fatalf("gateway saw %d requests; %d body bytes", g.n.Load(), res.BodyBytes)
	}
	if res.Reloads == 0 || len(hups) == 0 || len(hups) > res.Reloads {
		t.Fatalf("reloads sent %d, received %d", res.Reloads, len(hups))
	}
}

// TestSoakRunFlagsBrokenAnswers: truncated streams, streams without [DONE] and error
// statuses are each counted broken, exactly as many as the gateway damaged.
func TestSoakRunFlagsBrokenAnswers(t *testing.T) {
	g, base := startFake(t, func(n int64, stream bool) fault {
		switch {
		case stream && n%37 == 0:
			return faultTruncate
		case stream && n%53 == 0:
			return faultNoDone
		case n%97 == 0:
			return faultStatus
		}
		return faultNone
	}, 0)
	res, err := Run(context.Background(), runConfig(base))
	if err != nil {
		t.Fatal(err)
	}
	damaged := g.faults[faultTruncate] + g.faults[faultNoDone] + g.faults[faultStatus]
	if g.faults[faultTruncate] == 0 || g.faults[faultNoDone] == 0 || g.faults[faultStatus] == 0 {
		t.Fatalf("the plan damaged too little to test: %v", g.faults)
	}
	if res.Broken != damaged || res.OK != 400-damaged || res.Total != 400 {
		t.Fatalf("broken %d, ok %d; the gateway damaged %d (%v)\n%s", res.Broken, res.OK, damaged, g.faults, strings.Join(res.Failures, "\n"))
	}
	if res.Status[503] != g.faults[faultStatus] || res.Status[200] != 400-g.faults[faultStatus] {
		t.Fatalf("statuses %v; gateway %v", res.Status, g.faults)
	}
	if len(res.Failures) != MaxFailures {
		t.Fatalf("%d failure descriptions", len(res.Failures))
	}
	all := strings.Join(res.Failures, "\n")
	if strings.Contains(all, "test-caller-key") {
		t.Fatalf("a description leaks the caller key:\n%s", all)
	}
	t.Logf("failures:\n%s", all)
}

// TestSoakRunTruncationReadsAsUnexpectedEOF: the description of a cut stream says so.
func TestSoakRunTruncationReadsAsUnexpectedEOF(t *testing.T) {
	_, base := startFake(t, func(n int64, stream bool) fault {
		if stream {
			return faultTruncate
		}
		return faultNone
	}, 0)
	cfg := runConfig(base)
	cfg.Requests, cfg.StreamShare = 10, 1
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if res.Broken != 10 || !strings.Contains(res.Failures[0], "unexpected EOF") {
		t.Fatalf("%+v", res)
	}
}

func TestSoakRunRejectsBadConfig(t *testing.T) {
	for _, cfg := range []Config{
		{},
		{Base: "http://x/v1", Model: "m", Concurrency: 1, Requests: 1, Chunks: 0, ChunkSize: 1},
		{Base: "http://x/v1", Model: "m", Concurrency: 1, Requests: 1, Chunks: 1, ChunkSize: 1, StreamShare: 1.5},
		{Base: "http://x/v1", Model: "m", Concurrency: 1, Requests: 1, Chunks: 1, ChunkSize: 1, ReloadPID: 1},
	} {
		if _, err := Run(context.Background(), cfg); err == nil {
			t.Fatalf("%+v accepted", cfg)
		}
	}
}

func TestSoakKindMix(t *testing.T) {
	for _, c := range []struct {
		stream, usage       float64
		buf, plain, withUse int
	}{{0.8, 0.5, 200, 400, 400}, {1, 0, 0, 1000, 0}, {0, 1, 1000, 0, 0}, {1, 1, 0, 0, 1000}, {0.25, 0.5, 750, 125, 125}} {
		cfg := Config{StreamShare: c.stream, IncludeUsageShare: c.usage}
		var n [3]int
		for i := 0; i < 1000; i++ {
			n[cfg.kindOf(i)]++
		}
		if n != [3]int{c.buf, c.plain, c.withUse} {
			t.Fatalf("shares %v/%v: %v", c.stream, c.usage, n)
		}
	}
}

func TestSoakParseRequestsTotal(t *testing.T) {
	text := []byte(`# HELP x
gw_requests_total{model="soak",status="200"} 1998
gw_requests_total{model="soak",status="502"} 2
gw_requests_total{model="other",status="200"} 7
gw_requests_total{model="we\"ird,model=\\x",status="200"} 3
gw_request_e2e_latency_seconds_count{side="downstream"} 2007
`)
	got, err := ParseRequestsTotal(text, "soak")
	if err != nil || len(got) != 2 || got[200] != 1998 || got[502] != 2 {
		t.Fatalf("%v %v", got, err)
	}
	got, err = ParseRequestsTotal(text, `we"ird,model=\x`)
	if err != nil || len(got) != 1 || got[200] != 3 {
		t.Fatalf("escaped label: %v %v", got, err)
	}
	if _, err := ParseRequestsTotal([]byte(`gw_requests_total{model="soak,status="200"} 1`), "soak"); err == nil {
		t.Fatal("malformed labels accepted")
	}
}

func TestSoakAccessLogCounts(t *testing.T) {
	lines := []byte(`{"time":"t","level":"INFO","msg":"resource snapshot applied","trigger":"sighup","apply_seq":2}
{"ts":"t","msg":"access","method":"POST","path":"/v1/chat/completions","status":200,"model":"soak","stream":true,"attempts":1}
{"ts":"t","msg":"access","method":"POST","path":"/v1/chat/completions","status":200,"model":"soak","stream":false,"attempts":1}
2026/11/25 04:35:27 error when serving connection: panic while writing body stream: boom
{"ts":"t","msg":"access","method":"POST","path":"/v1/chat/completions","status":502,"stream":true,"error_class":"upstream"}
{"time":"t","level":"WARN","msg":"access","status":500,"stream":true}
{"ts":"t","msg":"access","method":"POST","status":200,"stream":tr
`)
	got := AccessLogCounts(lines)
	if len(got) != 2 || got[200] != 2 || got[502] != 1 {
		t.Fatalf("%v", got)
	}
	if s, b := AccessLogStreams(lines); s != 2 || b != 1 {
		t.Fatalf("streamed %d buffered %d", s, b)
	}
}
