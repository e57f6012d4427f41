package custom

import (
	"errors"
	"strings"
	"sync"
	"time"
	"unsafe"

	"modernc.org/quickjs"

	"gw/edge/guard"
)

// errNoImports is what the module loader answers for any import other than
// the script itself: a script has no filesystem, network or other modules.
var errNoImports = errors.New("imports are not available to custom guardrail scripts")

// jsRuntime is one QuickJS runtime with the guardrail's module evaluated
// and the glue's entry points held. It is used by one goroutine at a time
// (the pool hands it out exclusively).
type jsRuntime struct {
	vm      *quickjs.VM
	run     quickjs.Value // glue __gw_run
	settled quickjs.Value // glue __gw_settled
	push    quickjs.Value // glue __gw_push
	hooks   [2]bool       // Input, Output
	args    []any         // reused argument list of run
	dog     *watchdog
	closed  bool
}

// config is what every runtime of one guardrail is built from.
type config struct {
	name    string
	source  string
	secrets []string // name, value, name, value...
	memory  uintptr
	timeout time.Duration
}

// newRuntime starts a runtime and evaluates the module under the memory
// limit, by deadline. An error is a load error (*Error).
func newRuntime(c *config, deadline time.Time) (rt *jsRuntime, err error) {
	vm, err := quickjs.NewVM()
	if err != nil {
		return nil, &Error{Guardrail: c.name, Err: ErrEngine, Detail: "cannot start a runtime"}
	}
	r := &jsRuntime{vm: vm, dog: newWatchdog(vm)}
	r.dog.arm(deadline)
	// Each entry into JS gets what is left of timeout_ms, so the whole load
	// is bounded by it, not each step.
	budget := func() error {
		left := time.Until(deadline)
		if left <= 0 {
			return &Error{Guardrail: c.name, Err: ErrTimeout, Detail: "while loading the script"}
		}
		vm.SetEvalTimeout(left)
		return nil
	}
	defer func() {
		r.dog.disarm()
		if p := recover(); p != nil {
			err = &Error{Guardrail: c.name, Err: ErrEngine, Detail: "the engine panicked while loading the script"}
		}
		if err != nil {
			r.close()
			rt = nil
		}
	}()
	vm.SetMemoryLimit(c.memory)
	src := c.source
	vm.SetModuleLoader(func(_ *quickjs.VM, name string) (string, error) {
		if name == moduleName {
			return src, nil
		}
		return "", errNoImports
	}, nil)

	loadErr := func(e error) error {
		return &Error{Guardrail: c.name, Err: classify(e), Detail: "while loading the script"}
	}
	bc, e := glueBytecode()
	if e != nil {
		return nil, loadErr(e)
	}
	if err = budget(); err != nil {
		return nil, err
	}
	if _, e := vm.EvalBytecode(bc); e != nil {
		return nil, loadErr(e)
	}
	// Hold the entry points before the user's module runs: its top-level
	// code could replace the globals.
	if r.run, err = global(vm, "__gw_run"); err != nil {
		return nil, loadErr(err)
	}
	if r.settled, err = global(vm, "__gw_settled"); err != nil {
		return nil, loadErr(err)
	}
	if r.push, err = global(vm, "__gw_push"); err != nil {
		return nil, loadErr(err)
	}
	args := make([]any, 0, len(c.secrets))
	for _, s := range c.secrets {
		args = append(args, s)
	}
	if err = budget(); err != nil {
		return nil, err
	}
	if _, e := vm.Call("__gw_boot", args...); e != nil {
		return nil, loadErr(e)
	}
	if err = budget(); err != nil {
		return nil, err
	}
	if _, e := vm.ExecutePendingJobs(); e != nil {
		return nil, loadErr(e)
	}
	if err = budget(); err != nil {
		return nil, err
	}
	st, e := vm.Call("__gw_status")
	if e != nil {
		return nil, loadErr(e)
	}
	s, _ := st.(string)
	switch {
	case s == "M":
		return nil, &Error{Guardrail: c.name, Err: ErrMemory, Detail: "while loading the script"}
	case s == "P":
		return nil, &Error{Guardrail: c.name, Err: ErrEngine, Detail: "the module did not finish evaluating (a top-level await that never settles?)"}
	case strings.HasPrefix(s, "L"):
		return nil, &Error{Guardrail: c.name, Err: ErrThrew, Detail: loadDetail(s[1:], c.secrets)}
	case strings.HasPrefix(s, "O"):
		r.hooks = [2]bool{strings.Contains(s, "i"), strings.Contains(s, "o")}
		// The entry points are held as values; hooks need not see them.
		if err = budget(); err != nil {
			return nil, err
		}
		if _, e := vm.Eval(`delete globalThis.__gw_run; delete globalThis.__gw_settled; delete globalThis.__gw_push; delete globalThis.__gw_boot; delete globalThis.__gw_status;`, quickjs.EvalGlobal); e != nil {
			return nil, loadErr(e)
		}
	default:
		return nil, &Error{Guardrail: c.name, Err: ErrEngine, Detail: "unexpected load state"}
	}
	return r, nil
}

// glueBytecode compiles the glue once per process: parsing it was half of
// a runtime's cold start.
var glueBytecode = sync.OnceValues(func() ([]byte, error) {
	vm, err := quickjs.NewVM()
	if err != nil {
		return nil, err
	}
	defer vm.Close()
	return vm.Compile(glueJS, quickjs.EvalGlobal)
})

// loadDetail keeps a load error readable (a syntax error's message and
// position are what an operator needs) but scrubs secret values from it and
// bounds its length. Load errors come from the script's source and the
// engine, never from a request.
func loadDetail(msg string, secrets []string) string {
	for i := 1; i < len(secrets); i += 2 {
		if secrets[i] != "" {
			msg = strings.ReplaceAll(msg, secrets[i], "[REDACTED]")
		}
	}
	if len(msg) > 300 {
		cut := 300
		for cut > 0 && msg[cut]&0xC0 == 0x80 {
			cut--
		}
		msg = msg[:cut] + "..."
	}
	return msg
}

func global(vm *quickjs.VM, name string) (quickjs.Value, error) {
	g := vm.GlobalObject()
	defer g.Free()
	a, err := vm.NewAtom(name)
	if err != nil {
		return quickjs.Value{}, err
	}
	return vm.GetPropertyValue(g, a)
}

// call runs the phase's hook on texts and returns the glue's encoding.
// Every entry into JS gets what is left of the budget up to deadline.
// broken reports that the runtime must not be reused (interrupted, out of
// memory, or an engine error).
func (r *jsRuntime) call(phase guard.Phase, model string, texts []guard.Text, deadline time.Time) (enc string, broken bool, err error) {
	left := time.Until(deadline)
	if left <= 0 {
		return "", false, ErrTimeout
	}
	r.dog.arm(deadline)
	defer func() {
		r.dog.disarm()
		if p := recover(); p != nil {
			enc, broken, err = "", true, ErrEngine
		}
		clear(r.args)
		r.args = r.args[:0]
	}()
	// Texts beyond one batch go ahead through push: the engine limits how
	// many arguments one call may take.
	for len(texts) > textsPerCall {
		if left = time.Until(deadline); left <= 0 {
			return "", true, ErrTimeout
		}
		r.vm.SetEvalTimeout(left)
		r.args = appendTexts(r.args[:0], texts[:textsPerCall])
		if _, err = r.push.Call(quickjs.UndefinedValue, r.args...); err != nil {
			return "", true, classify(err)
		}
		texts = texts[textsPerCall:]
	}
	if left = time.Until(deadline); left <= 0 {
		return "", true, ErrTimeout
	}
	r.vm.SetEvalTimeout(left)
	r.args = appendTexts(append(r.args[:0], int(phase), model), texts)
	res, err := r.run.Call(quickjs.UndefinedValue, r.args...)
	if err != nil {
		return "", true, classify(err)
	}
	enc, _ = res.(string)
	if enc == "P" {
		// An async hook: drain the job queue, then read how it settled.
		if left = time.Until(deadline); left <= 0 {
			return "", true, ErrTimeout
		}
		r.vm.SetEvalTimeout(left)
		if _, err = r.vm.ExecutePendingJobs(); err != nil {
			return "", true, classify(err)
		}
		if left = time.Until(deadline); left <= 0 {
			return "", true, ErrTimeout
		}
		r.vm.SetEvalTimeout(left)
		if res, err = r.settled.Call(quickjs.UndefinedValue); err != nil {
			return "", true, classify(err)
		}
		if enc, _ = res.(string); enc == "P" {
			return "", false, errUnsettled
		}
	}
	// An out-of-memory the hook caught and reported is still a full heap.
	return enc, enc == "M", nil
}

// textsPerCall is how many texts one call into the glue carries.
const textsPerCall = 1024

// appendTexts appends each text as two arguments: role and part packed in
// one small int, and the text. The engine copies the bytes into its own
// string during the call, so the text is not copied into a Go string first.
func appendTexts(args []any, texts []guard.Text) []any {
	for i := range texts {
		t := &texts[i]
		args = append(args, int(t.Role)<<4|int(t.Part), bytesString(t.Data))
	}
	return args
}

var errUnsettled = &Error{Err: ErrResult, Detail: "the returned promise did not settle (no timers or I/O exist to settle it later)"}

func bytesString(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}

// classify maps an engine error to a sentinel. The engine's message is
// compared with the fixed texts QuickJS uses for its own limits and never
// passed on: a thrown value's message could carry anything.
func classify(err error) error {
	var qe *quickjs.Error
	if errors.As(err, &qe) {
		switch {
		case qe.Name == "InternalError" && qe.Message == "interrupted":
			return ErrTimeout
		case qe.Name == "InternalError" && qe.Message == "out of memory":
			return ErrMemory
		case qe.Name == "" && qe.Error() == "null":
			// The glue catches everything a script can throw, so a bare
			// null reaching Go is the engine failing to allocate even its
			// out-of-memory error.
			return ErrMemory
		}
	}
	if err.Error() == "OOM" {
		return ErrMemory
	}
	return ErrEngine
}

// close frees the held values and the VM. A VM that a panic abandoned can
// only be closed; its Free calls do nothing.
func (r *jsRuntime) close() {
	if r.closed {
		return
	}
	r.closed = true
	r.dog.disarm()
	if r.run.VM() != nil {
		r.run.Free()
	}
	if r.settled.VM() != nil {
		r.settled.Free()
	}
	if r.push.VM() != nil {
		r.push.Free()
	}
	r.vm.Close()
}
