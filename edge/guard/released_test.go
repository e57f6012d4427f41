package guard

import (
	"context"
	"errors"
	"testing"
)

// TestReleased: a checker answering ErrReleased (wrapped) passes the
// content whatever fail_open says and records the bypass timed_release.
func TestReleased(t *testing.T) {
	late := &wordChecker{err: errors.Join(ErrReleased, errors.New("bedrock: timeout"))}
	for _, p := range []Phase{Input, Output} {
		st := stage("late", late, nil) // fail_open and output_fail_open false
		var e Exec
		e.Reset()
		e.AddText(Text{Role: RoleUser, Data: []byte("x")}, false, true)
		if d := e.Judge(context.Background(), p, "m", []*Stage{st}); d != Pass {
			t.Fatalf("phase %d: got %d; want Pass", p, d)
		}
		if e.Outcome.BypassedReason != BypassTimedRelease || e.Outcome.BlockedFailClosed {
			t.Fatalf("phase %d: outcome %+v", p, e.Outcome)
		}
	}
}
