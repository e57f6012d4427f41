package datadog_test

import (
	"compress/gzip"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"gw/admin/resources"
	"gw/edge/usage"
	"gw/edge/usage/datadog"
	"gw/edge/usage/usagetest"
)

// intake is an HTTP receiver that checks the documented shape of the logs
// intake v2: POST /api/v2/logs, DD-API-KEY, JSON array body (gzip when
// Content-Encoding says so), answering 202.
type intake struct {
	mu      sync.Mutex
	entries []map[string]any
	bad     []string
}

func (in *intake) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	fail := func(status int, why string) {
		in.mu.Lock()
		in.bad = append(in.bad, why)
		in.mu.Unlock()
		http.Error(w, `{"errors":[{"status":"`+http.StatusText(status)+`"}]}`, status)
	}
	if r.Method != http.MethodPost || r.URL.Path != "/api/v2/logs" {
		fail(404, "path "+r.URL.Path)
		return
	}
	if r.Header.Get("DD-API-KEY") != "dd-key" {
		fail(403, "api key")
		return
	}
	if r.Header.Get("Content-Type") != "application/json" {
		fail(400, "content type")
		return
	}
	var body io.Reader = r.Body
	if r.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			fail(400, "gzip")
			return
		}
		body = zr
	}
	var entries []map[string]any
	if err := json.NewDecoder(body).Decode(&entries); err != nil {
		fail(400, "json: "+err.Error())
		return
	}
	if len(entries) > datadog.MaxBatch {
		fail(413, "too many entries")
		return
	}
	in.mu.Lock()
	in.entries = append(in.entries, entries...)
	in.mu.Unlock()
	w.WriteHeader(http.StatusAccepted)
	_, _ = w.Write([]byte("{}"))
}

func TestDatadogExport(t *testing.T) {
	in := &intake{}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: in}
	go srv.Serve(ln)
	defer srv.Close()

	if got := datadog.IntakeURL("datadoghq.eu"); got != "https://http-intake.logs.datadoghq.eu/api/v2/logs" {
		t.Fatalf("intake URL %s", got)
	}
	s := datadog.New(&resources.DatadogExporter{Site: "datadoghq.com", APIKey: resources.NewSecret("dd-key"), Service: "gw-test"})
	s.URL = "http://" + ln.Addr().String() + "/api/v2/logs"
	p := usagetest.Pipeline(t, "datadog", 10, usage.ExporterPolicy, nil, s)
	for i := 0; i < 12; i++ {
		p.Emit(usagetest.Record(i))
	}
	usagetest.Eventually(t, 5*time.Second, "12 log entries", func() bool { in.mu.Lock(); defer in.mu.Unlock(); return len(in.entries) == 12 })
	in.mu.Lock()
	defer in.mu.Unlock()
	if len(in.bad) > 0 {
		t.Fatalf("refused requests: %v", in.bad)
	}
	e := in.entries[0]
	for k, want := range map[string]any{"ddsource": "gw", "service": "gw-test", "status": "info", "model": "gpt", "status_code": 200.0,
		"ddtags": "model:gpt,status_code:200", "user_name": "Ann", "attempt_kind": "final"} {
		if e[k] != want {
			t.Fatalf("%s = %#v; want %#v (entry %v)", k, e[k], want, e)
		}
	}
	if e["message"] == "" || e["event_id"] == nil || e["occurred_at"] == nil {
		t.Fatalf("entry %v", e)
	}
}
