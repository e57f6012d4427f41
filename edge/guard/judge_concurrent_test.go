package guard

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"gw/admin/resources"
)

// concChecker is a Concurrent test kind: it waits at a barrier shared by
// the group (so the test only passes if the group really runs at once),
// then blocks texts containing word, or fails with err.
type concChecker struct {
	word    string
	err     error
	barrier *barrier
	mu      sync.Mutex
	seen    []string // texts judged
}

func (c *concChecker) Concurrent() bool { return true }
func (c *concChecker) CallDeadlines()   {}

func (c *concChecker) Check(ctx context.Context, req *Request, v *Verdict) error {
	if c.barrier != nil && !c.barrier.wait() {
		return errBoom // never reached the others: not concurrent
	}
	c.mu.Lock()
	for _, t := range req.Texts {
		c.seen = append(c.seen, string(t.Data))
	}
	c.mu.Unlock()
	if c.err != nil {
		return c.err
	}
	for _, t := range req.Texts {
		if c.word != "" && bytes.Contains(t.Data, []byte(c.word)) {
			v.Action, v.Rule = Block, "conc"
		}
	}
	return nil
}

// barrier releases its n parties once all have arrived; wait reports
// false after 5 s without them.
type barrier struct {
	mu   sync.Mutex
	n    int
	done chan struct{}
}

func newBarrier(n int) *barrier { return &barrier{n: n, done: make(chan struct{})} }

func (b *barrier) wait() bool {
	b.mu.Lock()
	b.n--
	if b.n == 0 {
		close(b.done)
	}
	b.mu.Unlock()
	select {
	case <-b.done:
		return true
	case <-time.After(5 * time.Second):
		return false
	}
}

func TestJudgeConcurrentGroup(t *testing.T) {
	f := func(name string, checkers []Checker, texts []string, want Decision, applied, enforced string, mut func(i int, g *resources.Guardrail)) {
		t.Helper()
		var stages []*Stage
		for i, ck := range checkers {
			stages = append(stages, stage("g"+string(rune('0'+i)), ck, func(g *resources.Guardrail) {
				if mut != nil {
					mut(i, g)
				}
			}))
		}
		var e Exec
		for _, s := range texts {
			e.AddText(Text{Data: []byte(s)}, false, true)
		}
		got := e.Judge(context.Background(), Input, "m", stages)
		if got != want {
			t.Fatalf("%s: decision %d; want %d (err %v)", name, got, want, e.Err)
		}
		if a := strings.Join(e.Outcome.Applied, ","); a != applied {
			t.Fatalf("%s: applied %q; want %q", name, a, applied)
		}
		if h := hitsString(e.Outcome.Enforced); h != enforced {
			t.Fatalf("%s: enforced %q; want %q", name, h, enforced)
		}
	}
	b := newBarrier(3)
	f("three run at once, all pass", []Checker{&concChecker{barrier: b}, &concChecker{barrier: b}, &concChecker{barrier: b}},
		[]string{"hello"}, Pass, "g0,g1,g2", "", nil)

	// Chain order decides: g1's block wins over g2's, g2 is not recorded.
	b = newBarrier(3)
	f("first block in chain order", []Checker{&concChecker{barrier: b}, &concChecker{word: "x", barrier: b}, &concChecker{word: "x", barrier: b}},
		[]string{"x"}, Blocked, "g0,g1", "g1:block", nil)

	// A fail-closed error before a block decides as it would sequentially.
	b = newBarrier(2)
	f("error before block", []Checker{&concChecker{err: errBoom, barrier: b}, &concChecker{word: "x", barrier: b}},
		[]string{"x"}, Unavailable, "g0", "g0:blocked_fail_closed", nil)

	// A fail-open error is a bypass; the next member's block still applies.
	b = newBarrier(2)
	f("fail-open error then block", []Checker{&concChecker{err: errBoom, barrier: b}, &concChecker{word: "x", barrier: b}},
		[]string{"x"}, Blocked, "g0,g1", "g1:block", func(i int, g *resources.Guardrail) { g.FailOpen = i == 0 })
}

// TestJudgeConcurrentBarrier: a rewriting stage splits the groups, and the
// stages after it see its rewrite.
func TestJudgeConcurrentBarrier(t *testing.T) {
	b1 := newBarrier(2)
	c0, c1 := &concChecker{barrier: b1}, &concChecker{barrier: b1}
	c3 := &concChecker{word: "secret"}
	stages := []*Stage{stage("c0", c0, nil), stage("c1", c1, nil), stage("mask", &wordChecker{word: "secret", mask: true}, nil), stage("c3", c3, nil)}
	var e Exec
	e.AddText(Text{Data: []byte("a secret")}, false, true)
	if d := e.Judge(context.Background(), Input, "m", stages); d != Masked {
		t.Fatalf("decision %d; want Masked (err %v)", d, e.Err)
	}
	if len(c3.seen) != 1 || c3.seen[0] != "a [X]" {
		t.Fatalf("stage after the rewrite saw %q; want [\"a [X]\"]", c3.seen)
	}
	if len(c0.seen) != 1 || c0.seen[0] != "a secret" {
		t.Fatalf("stage before the rewrite saw %q", c0.seen)
	}
}

// TestJudgeConcurrentLatestTurn: members with input_messages latest_turn
// share one view of the latest turn.
func TestJudgeConcurrentLatestTurn(t *testing.T) {
	b := newBarrier(2)
	c0, c1 := &concChecker{barrier: b}, &concChecker{barrier: b}
	latest := func(g *resources.Guardrail) { g.InputMessages = resources.InputMessagesLatestTurn }
	stages := []*Stage{stage("c0", c0, latest), stage("c1", c1, nil)}
	var e Exec
	e.AddText(Text{Data: []byte("old")}, false, false)
	e.AddText(Text{Data: []byte("new")}, false, true)
	if d := e.Judge(context.Background(), Input, "m", stages); d != Pass {
		t.Fatalf("decision %d (err %v)", d, e.Err)
	}
	if strings.Join(c0.seen, ",") != "new" || strings.Join(c1.seen, ",") != "old,new" {
		t.Fatalf("latest_turn member saw %q, all-messages member saw %q", c0.seen, c1.seen)
	}

	// A latest_turn member with no latest text is applied, judges nothing.
	c0, c1 = &concChecker{}, &concChecker{word: "x"}
	stages = []*Stage{stage("c0", c0, latest), stage("c1", c1, nil)}
	e = Exec{}
	e.AddText(Text{Data: []byte("x")}, false, false)
	if d := e.Judge(context.Background(), Input, "m", stages); d != Blocked {
		t.Fatalf("decision %d; want Blocked (err %v)", d, e.Err)
	}
	if len(c0.seen) != 0 || strings.Join(e.Outcome.Applied, ",") != "c0,c1" {
		t.Fatalf("latest_turn member saw %q; applied %q", c0.seen, e.Outcome.Applied)
	}
}

// TestCompileCallDeadlines: a checker timing its own calls gets no
// whole-check deadline from the engine.
func TestCompileCallDeadlines(t *testing.T) {
	st := stage("r", &concChecker{}, func(g *resources.Guardrail) { g.TimeoutMS = 100 })
	if st.timeout != 0 || !st.conc {
		t.Fatalf("remote stage: timeout %v conc %v; want 0 true", st.timeout, st.conc)
	}
	st = stage("w", &wordChecker{}, func(g *resources.Guardrail) { g.TimeoutMS = 100 })
	if st.timeout != 100*time.Millisecond || st.conc {
		t.Fatalf("in-process stage: timeout %v conc %v", st.timeout, st.conc)
	}
}
