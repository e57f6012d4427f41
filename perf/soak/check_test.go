package soak

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"gw/perf/mock"
)

// startMock serves the real mock upstream on a loopback port for the test.
func startMock(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	m := mock.New(mock.Config{RecordLimit: -1})
	go m.Serve(ln)
	t.Cleanup(func() { m.Shutdown() })
	return "http://" + ln.Addr().String() + "/v1"
}

// fetch asks the mock directly for one answer of kind k, as gw would forward it: the
// checker's expected bytes then have to match the mock's own rendering.
func fetch(t *testing.T, base string, cfg Config, k kind) []byte {
	t.Helper()
	sh := cfg.shapes()[k]
	req, _ := http.NewRequest(http.MethodPost, base+"/chat/completions", bytes.NewReader(sh.body))
	req.Header.Set("x-mock-chunks", strconv.Itoa(cfg.Chunks))
	req.Header.Set("x-mock-chunk-size", strconv.Itoa(cfg.ChunkSize))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("mock answer: %d %v\n%s", resp.StatusCode, err, b)
	}
	return b
}

func testConfig(chunks, size int) Config {
	cfg := Config{Base: "http://127.0.0.1:1/v1", Model: "soak-alias", Concurrency: 1, Requests: 1, Chunks: chunks, ChunkSize: size}
	if err := cfg.validate(); err != nil {
		panic(err)
	}
	return cfg
}

// TestSoakTemplateMatchesMock: the expected bytes equal the mock's answers in every shape,
// also when the content wraps around the filler text.
func TestSoakTemplateMatchesMock(t *testing.T) {
	base := startMock(t)
	for _, sz := range [][2]int{{20, 16}, {3, 10}, {1, 1}, {60, 7}} {
		cfg := testConfig(sz[0], sz[1])
		shapes := cfg.shapes()
		for k := range shapes {
			body := fetch(t, base, cfg, kind(k))
			if err := shapes[k].check.Check(body); err != nil {
				t.Fatalf("%d×%d %s: %v\n%s", sz[0], sz[1], kindNames[k], err, body)
			}
		}
	}
}

// events splits a stream into its events, each with its "\n\n".
func events(b []byte) [][]byte {
	var out [][]byte
	for len(b) > 0 {
		i := bytes.Index(b, []byte("\n\n"))
		out = append(out, b[:i+2])
		b = b[i+2:]
	}
	return out
}

func join(evs [][]byte) []byte { return bytes.Join(evs, nil) }

func mustFlag(t *testing.T, c *Checker, name string, body []byte, want string) {
	t.Helper()
	err := c.Check(body)
	if err == nil {
		t.Fatalf("%s: not flagged", name)
	}
	if !strings.Contains(err.Error(), want) {
		t.Fatalf("%s: %v; want it to mention %q", name, err, want)
	}
	if len(err.Error()) > 400 {
		t.Fatalf("%s: description too long (%d bytes): %v", name, len(err.Error()), err)
	}
}

// TestSoakCheckFlagsBrokenStreams feeds the checker a correct transcript and damaged copies.
func TestSoakCheckFlagsBrokenStreams(t *testing.T) {
	base := startMock(t)
	cfg := testConfig(20, 16)
	sh := cfg.shapes()
	good := fetch(t, base, cfg, kindStreamUsage)
	c := sh[kindStreamUsage].check
	if err := c.Check(good); err != nil {
		t.Fatalf("correct transcript flagged: %v", err)
	}
	evs := events(good)
	// role, 20 content, finish, usage, [DONE]
	if len(evs) != 24 {
		t.Fatalf("%d events", len(evs))
	}
	edit := func(f func(e [][]byte) [][]byte) []byte {
		cp := make([][]byte, len(evs))
		for i, e := range evs {
			cp[i] = append([]byte(nil), e...)
		}
		return join(f(cp))
	}

	mustFlag(t, c, "truncated mid-chunk", good[:len(good)/2], "ends early")
	mustFlag(t, c, "missing [DONE]", edit(func(e [][]byte) [][]byte { return e[:23] }), "event 23 ([DONE])")
	mustFlag(t, c, "missing usage chunk", edit(func(e [][]byte) [][]byte { return append(e[:22], e[23]) }), "event 22 (usage chunk)")
	mustFlag(t, c, "reordered chunks", edit(func(e [][]byte) [][]byte { e[4], e[5] = e[5], e[4]; return e }), "event 4 (content chunk 3)")
	mustFlag(t, c, "duplicated chunk", edit(func(e [][]byte) [][]byte {
		return append(e[:6], append([][]byte{e[5]}, e[6:]...)...)
	}), "event 6 (content chunk 5)")
	mustFlag(t, c, "wrong filler byte", edit(func(e [][]byte) [][]byte {
		i := bytes.Index(e[8], []byte(`"content":"`)) + len(`"content":"`) + 3
		e[8][i] ^= 0x20
		return e
	}), "event 8 (content chunk 7)")
	mustFlag(t, c, "chunk of another answer", edit(func(e [][]byte) [][]byte {
		e[10] = bytes.Replace(e[10], []byte(idPrefix), []byte(idPrefix+"9"), 1)
		return e
	}), "event 10 (content chunk 9)")
	mustFlag(t, c, "data after [DONE]", append(append([]byte(nil), good...), "data: [DONE]\n\n"...), "after the end")
	mustFlag(t, c, "not an answer", []byte(`{"error":{"message":"x"}}`), "does not start")
	mustFlag(t, c, "empty body", nil, "does not start")

	// Every truncation is flagged, however short the loss.
	for n := 0; n < len(good); n++ {
		if c.Check(good[:n]) == nil {
			t.Fatalf("truncation to %d of %d bytes not flagged", n, len(good))
		}
	}
	// Every single-byte change is flagged: id and created included, since every event
	// repeats them.
	for i := range good {
		bad := append([]byte(nil), good...)
		bad[i] ^= 0x01
		if c.Check(bad) == nil {
			t.Fatalf("byte %d changed (%q → %q) not flagged", i, good[i], bad[i])
		}
	}
}

// TestSoakCheckUsageShapes: usage must be present exactly when it was asked for.
func TestSoakCheckUsageShapes(t *testing.T) {
	base := startMock(t)
	cfg := testConfig(5, 8)
	sh := cfg.shapes()
	plain, withUsage := fetch(t, base, cfg, kindStream), fetch(t, base, cfg, kindStreamUsage)
	if sh[kindStreamUsage].check.Check(plain) == nil {
		t.Fatal("a stream without usage passes where usage was asked")
	}
	if sh[kindStream].check.Check(withUsage) == nil {
		t.Fatal("a stream with usage passes where none was asked")
	}
	if sh[kindBuffered].check.Check(plain) == nil || sh[kindStream].check.Check(fetch(t, base, cfg, kindBuffered)) == nil {
		t.Fatal("a stream passes as a buffered answer, or the reverse")
	}
}

// TestSoakCheckFlagsBrokenBuffered: every change outside the id and created is flagged
// (a buffered answer carries them once, so they cannot be cross-checked).
func TestSoakCheckFlagsBrokenBuffered(t *testing.T) {
	base := startMock(t)
	cfg := testConfig(20, 16)
	c := cfg.shapes()[kindBuffered].check
	good := fetch(t, base, cfg, kindBuffered)
	if err := c.Check(good); err != nil {
		t.Fatalf("correct answer flagged: %v", err)
	}
	id, created, err := c.identity(good)
	if err != nil {
		t.Fatal(err)
	}
	idAt, createdAt := bytes.Index(good, id), bytes.Index(good, []byte(`"created":`))+len(`"created":`)
	variable := func(i int) bool {
		return i >= idAt+len(idPrefix) && i < idAt+len(id) || i >= createdAt && i < createdAt+len(created)
	}
	for i := range good {
		bad := append([]byte(nil), good...)
		bad[i] ^= 0x01
		if c.Check(bad) == nil && !variable(i) {
			t.Fatalf("byte %d changed (%q → %q) not flagged", i, good[i], bad[i])
		}
	}
	for n := 0; n < len(good); n++ {
		if c.Check(good[:n]) == nil {
			t.Fatalf("truncation to %d bytes not flagged", n)
		}
	}
	mustFlag(t, c, "wrong usage", bytes.Replace(good, []byte(`"completion_tokens":20`), []byte(`"completion_tokens":21`), 1), "differs")
}
