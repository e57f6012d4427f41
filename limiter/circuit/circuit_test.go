package circuit

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"
)

// fakeClient is one dialled client; closed says whether the circuit
// dropped it.
type fakeClient struct {
	id     int
	closed bool
}

type fakeStore struct {
	dialDown, pingDown bool
	dials              []*fakeClient
}

func (f *fakeStore) store() Store[*fakeClient] {
	return Store[*fakeClient]{
		Dial: func() (*fakeClient, error) {
			if f.dialDown {
				return nil, errors.New("dial refused")
			}
			c := &fakeClient{id: len(f.dials)}
			f.dials = append(f.dials, c)
			return c, nil
		},
		Ping: func(*fakeClient) error {
			if f.pingDown {
				return errors.New("ping failed")
			}
			return nil
		},
		Close: func(c *fakeClient) { c.closed = true },
	}
}

type logLine struct{ level, msg string }

type testLog struct {
	mu    sync.Mutex
	lines []logLine
}

func (l *testLog) Warn(msg string, _ ...any) { l.add("warn", msg) }
func (l *testLog) Info(msg string, _ ...any) { l.add("info", msg) }
func (l *testLog) add(level, msg string) {
	l.mu.Lock()
	l.lines = append(l.lines, logLine{level, msg})
	l.mu.Unlock()
}

var cfg = Config{
	Timing:    Timing{FailureThreshold: 3, ProbeInterval: 30 * time.Second, WarnInterval: 5 * time.Minute},
	Component: "test", Where: "127.0.0.1:6379", Meanwhile: "missing meanwhile", Reattached: "back",
}

const sec = int64(time.Second)

func TestCircuit(t *testing.T) {
	fs := &fakeStore{}
	log := &testLog{}
	c := New(cfg, log, fs.store(), 0)
	state := func(want State) {
		t.Helper()
		if got := c.State(); got != want {
			t.Fatalf("state %s; want %s", got, want)
		}
	}
	state(Connected)
	if cl, ok := c.Usable(); !ok || cl != fs.dials[0] {
		t.Fatal("a connected circuit did not hand out its client")
	}

	// Failures below the threshold degrade; a success resets the streak.
	err := errors.New("i/o timeout")
	c.Failure(1, err)
	c.Failure(2, err)
	state(Degraded)
	if _, ok := c.Usable(); !ok {
		t.Fatal("a degraded circuit refused its client")
	}
	c.Success()
	state(Connected)
	c.Failure(3, err)
	c.Failure(4, err)
	if len(log.lines) != 0 {
		t.Fatalf("logged %v before the circuit opened", log.lines)
	}
	c.Failure(5*sec, err)
	state(Open)
	if _, ok := c.Usable(); ok {
		t.Fatal("an open circuit handed out its client")
	}
	c.Failure(6*sec, err) // already open: no second warning
	if len(log.lines) != 1 || log.lines[0] != (logLine{"warn", "test: shared store unreachable; circuit open, missing meanwhile"}) {
		t.Fatalf("log %v; want one circuit-open warning", log.lines)
	}

	// Not due: nothing happens. Due, store still down: open another interval.
	c.Poll(20 * sec)
	if len(fs.dials) != 1 {
		t.Fatal("probed before ProbeInterval")
	}
	fs.pingDown = true
	c.Poll(35 * sec)
	state(Open)
	if len(fs.dials) != 2 || !fs.dials[1].closed || fs.dials[0].closed {
		t.Fatalf("a failed probe must close its own fresh client and keep the old one: %+v %+v", fs.dials[0], fs.dials[1])
	}
	c.Poll(60 * sec) // the failed probe restarted the interval
	if len(fs.dials) != 2 {
		t.Fatal("probed again within the interval after a failed probe")
	}

	// Back: the fresh client replaces the old one, which is closed.
	fs.pingDown = false
	c.Poll(65 * sec)
	state(Connected)
	if cl, ok := c.Usable(); !ok || cl != fs.dials[2] || !fs.dials[0].closed {
		t.Fatalf("after reattaching: client %+v, old %+v; want the probe's client, the old one closed", cl, fs.dials[0])
	}
	if last := log.lines[len(log.lines)-1]; last != (logLine{"info", "test: shared store reattached; back"}) {
		t.Fatalf("last log %v; want the reattach line", last)
	}

	// Close: the client is closed and no probe dials again.
	c.Close()
	state(Open)
	if !fs.dials[2].closed {
		t.Fatal("Close left the client open")
	}
	c.Poll(1 << 62)
	if len(fs.dials) != 3 {
		t.Fatal("probed after Close")
	}
}

func TestCircuitStartsOpen(t *testing.T) {
	fs := &fakeStore{dialDown: true}
	log := &testLog{}
	c := New(cfg, log, fs.store(), 0)
	if c.State() != Open {
		t.Fatalf("state %s with the store down at startup; want circuit_open", c.State())
	}
	if _, ok := c.Usable(); ok {
		t.Fatal("handed out a client that was never dialled")
	}
	// The warning repeats every WarnInterval while the store stays away.
	for i, now := range []int64{31 * sec, 62 * sec, 301 * sec} {
		c.Poll(now)
		if c.State() != Open {
			t.Fatalf("poll %d: reattached without a store", i)
		}
	}
	warns := 0
	for _, l := range log.lines {
		if l.level == "warn" {
			warns++
		}
	}
	if warns != 2 { // startup, then once at 301 s
		t.Fatalf("%d warnings; want 2: %v", warns, log.lines)
	}
	fs.dialDown = false
	c.Poll(400 * sec)
	if c.State() != Connected {
		t.Fatal("did not attach when the store came up")
	}
}

// A dial that returns the client it already holds (a store without
// per-dial clients) must not close it on replacement.
func TestCircuitProbeSameClient(t *testing.T) {
	one := &fakeClient{}
	c := New(cfg, &testLog{}, Store[*fakeClient]{
		Dial:  func() (*fakeClient, error) { return one, nil },
		Ping:  func(*fakeClient) error { return nil },
		Close: func(cl *fakeClient) { cl.closed = true },
	}, 0)
	for i := 0; i < cfg.FailureThreshold; i++ {
		c.Failure(0, errors.New("x"))
	}
	c.Poll(cfg.ProbeInterval.Nanoseconds())
	if c.State() != Connected || one.closed {
		t.Fatalf("state %s, closed %v; want connected with the client open", c.State(), one.closed)
	}
}

func TestStateString(t *testing.T) {
	for s, want := range map[State]string{Connected: "connected", Degraded: "degraded", Open: "circuit_open", 7: "unknown"} {
		if got := fmt.Sprint(s); got != want {
			t.Fatalf("%d: %q; want %q", s, got, want)
		}
	}
}

// TestTimingDefaults: zero and negative fields take the documented
// defaults; set ones are kept. Both stores (limiter, cache) rely on it.
func TestTimingDefaults(t *testing.T) {
	def := Timing{Timeout: 250 * time.Millisecond, DialTimeout: 2 * time.Second, FailureThreshold: 5,
		ProbeInterval: 30 * time.Second, WarnInterval: 5 * time.Minute}
	set := Timing{Timeout: time.Second, DialTimeout: time.Second, FailureThreshold: 2,
		ProbeInterval: time.Second, WarnInterval: time.Minute}
	for _, tc := range []struct {
		name    string
		in, out Timing
	}{
		{"zero", Timing{}, def},
		{"negative", Timing{Timeout: -1, DialTimeout: -1, FailureThreshold: -1, ProbeInterval: -1, WarnInterval: -1}, def},
		{"set", set, set},
	} {
		if got := tc.in.WithDefaults(); got != tc.out {
			t.Errorf("%s: WithDefaults() = %+v; want %+v", tc.name, got, tc.out)
		}
	}
}

// TestNewAppliesDefaults: a circuit configured without a threshold opens
// after the default five consecutive failures, not on the first.
func TestNewAppliesDefaults(t *testing.T) {
	fs := &fakeStore{}
	c := New(Config{Component: "test"}, &testLog{}, fs.store(), 0)
	err := errors.New("i/o timeout")
	for i := int64(1); i <= 4; i++ {
		c.Failure(i, err)
	}
	if c.State() != Degraded {
		t.Fatalf("state %s after 4 failures; want degraded", c.State())
	}
	c.Failure(5, err)
	if c.State() != Open {
		t.Fatalf("state %s after 5 failures; want open", c.State())
	}
}
