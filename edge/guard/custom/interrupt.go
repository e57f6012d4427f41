package custom

// This file holds the package's reach into the engine's internals: the
// watchdog that makes timeout_ms hold against loops whose iterations are
// slow native calls.
//
// QuickJS consults its interrupt handler (where the eval timeout and
// VM.Interrupt are checked) only every 10,000 polls, and it polls once per
// loop iteration or JS call. A loop around a slow native call,
//
//	const s = "x".repeat(1e6); while (true) s.toUpperCase();
//
// then polls every few milliseconds and runs for minutes past its timeout
// (measured: 3m45s for timeout_ms 100). The fix is to set the context's
// poll countdown to 1 once the deadline has passed, so the very next poll
// consults the handler, which sees the deadline and stops the script.
// modernc.org/quickjs does not expose the JSContext, so its address is read
// from the VM's unexported field, found by name through reflection once at
// start-up; the countdown's offset comes from the engine's own struct
// type. TestSlowNativeLoopStopped fails if an upgrade moves either.

import (
	"reflect"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	lib "modernc.org/libquickjs"
	"modernc.org/quickjs"
)

// vmContextOffset is the offset of quickjs.VM's JSContext pointer, or -1
// when this version of the library does not have the field where expected.
var vmContextOffset = func() int {
	t := reflect.TypeFor[quickjs.VM]()
	f, ok := t.FieldByName("cContext")
	if !ok || f.Type.Kind() != reflect.Uintptr {
		return -1
	}
	// A promoted field's Offset is relative to its own struct: add the
	// offsets along the index path.
	off := uintptr(0)
	for i := range f.Index {
		off += t.FieldByIndex(f.Index[:i+1]).Offset
	}
	return int(off)
}()

// pokeEvery re-arms the poke while a stopped script has not returned yet:
// the engine's own decrement of the countdown can overwrite one poke.
const pokeEvery = 2 * time.Millisecond

// watchdog stops a runtime's script at its deadline even between the
// engine's rare handler checks.
type watchdog struct {
	counter *int32 // the JSContext's interrupt countdown; nil if unknown
	timer   *time.Timer

	mu   sync.Mutex // orders poke against disarm (and so against close)
	busy bool
}

func newWatchdog(vm *quickjs.VM) *watchdog {
	w := &watchdog{}
	if vmContextOffset >= 0 {
		// The field holds the address of C memory, never Go memory.
		ctx := *(*unsafe.Pointer)(unsafe.Add(unsafe.Pointer(vm), vmContextOffset))
		if ctx != nil {
			w.counter = (*int32)(unsafe.Add(ctx, unsafe.Offsetof(lib.TJSContext{}.Finterrupt_counter)))
		}
	}
	w.timer = time.AfterFunc(time.Hour, w.poke)
	w.timer.Stop()
	return w
}

// arm starts watching a call that must end by deadline.
func (w *watchdog) arm(deadline time.Time) {
	w.mu.Lock()
	w.busy = true
	w.mu.Unlock()
	w.timer.Reset(time.Until(deadline))
}

// disarm ends the watch. After it returns no poke touches the engine, so
// the runtime may be reused or closed.
func (w *watchdog) disarm() {
	w.mu.Lock()
	w.busy = false
	w.timer.Stop()
	w.mu.Unlock()
}

// poke makes the engine's next poll consult the interrupt handler, which
// stops a script past its deadline (or with VM.Interrupt pending).
func (w *watchdog) poke() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.busy || w.counter == nil {
		return
	}
	atomic.StoreInt32(w.counter, 1)
	w.timer.Reset(pokeEvery)
}
