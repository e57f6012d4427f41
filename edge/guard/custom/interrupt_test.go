package custom

import (
	"testing"

	"modernc.org/quickjs"
)

// The watchdog depends on the library's internals; an upgrade that moves
// them must fail here, not silently weaken timeout_ms.
func TestWatchdogFindsTheCountdown(t *testing.T) {
	if vmContextOffset < 0 {
		t.Fatal("quickjs.VM has no cContext field: the watchdog cannot reach the engine's interrupt countdown")
	}
	vm, err := quickjs.NewVM()
	if err != nil {
		t.Fatal(err)
	}
	defer vm.Close()
	w := newWatchdog(vm)
	if w.counter == nil {
		t.Fatal("no interrupt countdown found")
	}
	// After a short loop the countdown was reset to the engine's
	// INTERRUPT_COUNTER_INIT (10000) at the first poll and then went down
	// by about one per iteration.
	if _, err := vm.Eval("for (let i = 0; i < 100; i++) {}", quickjs.EvalGlobal); err != nil {
		t.Fatal(err)
	}
	if got := *w.counter; got < 9000 || got >= 10000 {
		t.Fatalf("countdown reads %d; want 9000..9999 (wrong offset?)", got)
	}
}
