package custom_test

import (
	"context"
	"errors"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"gw/admin/resources"
	"gw/edge/guard"
	"gw/edge/guard/custom"
)

func guardrail(script string, timeoutMS, mem int64, secrets map[string]string) *resources.Guardrail {
	s := map[string]resources.Secret{}
	for k, v := range secrets {
		s[k] = resources.NewSecret(v)
	}
	return &resources.Guardrail{Name: "js", Kind: resources.GuardrailCustom, TimeoutMS: timeoutMS,
		Options: &resources.CustomScriptOptions{Script: script, MaxMemoryBytes: mem, Secrets: s}}
}

func newChecker(t testing.TB, script string) *custom.Checker {
	t.Helper()
	return newCheckerWith(t, guardrail(script, 5000*slowdown, 16<<20, nil))
}

func newCheckerWith(t testing.TB, g *resources.Guardrail) *custom.Checker {
	t.Helper()
	c, err := custom.New(g)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	cc := c.(*custom.Checker)
	t.Cleanup(func() { cc.Close() })
	return cc
}

func request(phase guard.Phase, texts ...string) *guard.Request {
	r := &guard.Request{Phase: phase, Model: "gpt-test"}
	for i, s := range texts {
		role := guard.RoleUser
		if i == 0 && len(texts) > 1 {
			role = guard.RoleSystem
		}
		r.Texts = append(r.Texts, guard.Text{Role: role, Part: guard.PartContent, Data: []byte(s)})
	}
	return r
}

const wordFilter = `
export function checkInput(input, ctx) {
  for (const t of input.texts) {
    if (t.text.includes("forbidden")) return { action: "block", reason: "no forbidden words", rule: "word.forbidden" };
    if (t.text.includes("secret-number")) return { action: "replace", texts: input.texts.map(x => x.text.replaceAll(/\d{4,}/g, "[NUM]")) };
  }
  return { action: "allow" };
}
export async function checkOutput(output, ctx) {
  if (output.texts[0].text.includes("bad")) return { action: "block", reason: "bad output" };
}
`

func TestCheckVerdicts(t *testing.T) {
	c := newChecker(t, wordFilter)
	f := func(req *guard.Request, action guard.Action, rule, msg string, masks map[int]string) {
		t.Helper()
		var v guard.Verdict
		if err := c.Check(context.Background(), req, &v); err != nil {
			t.Fatalf("Check: %v", err)
		}
		if v.Action != action || v.Rule != rule || v.Message != msg {
			t.Fatalf("got action %d rule %q message %q; want %d %q %q", v.Action, v.Rule, v.Message, action, rule, msg)
		}
		if len(v.Masks) != len(masks) {
			t.Fatalf("got %d masks; want %d", len(v.Masks), len(masks))
		}
		for _, m := range v.Masks {
			if want, ok := masks[m.Index]; !ok || string(m.Data) != want {
				t.Fatalf("mask %d = %q; want %q", m.Index, m.Data, masks[m.Index])
			}
		}
	}
	f(request(guard.Input, "You are kind", "hello"), guard.Allow, "", "", nil)
	f(request(guard.Input, "You are kind", "a forbidden thing"), guard.Block, "word.forbidden", "no forbidden words", nil)
	// Only the changed text gets a mask; the unchanged one keeps its bytes.
	f(request(guard.Input, "system 12345", "my secret-number is 987654, ok"), guard.Rewrite, custom.DefaultRule, "",
		map[int]string{0: "system [NUM]", 1: "my secret-number is [NUM], ok"})
	f(request(guard.Input, "plain", "secret-number none"), guard.Allow, "", "", nil)
	// checkOutput is async: its promise is settled within the call.
	f(request(guard.Output, "all good"), guard.Allow, "", "", nil)
	f(request(guard.Output, "bad answer"), guard.Block, custom.DefaultRule, "bad output", nil)
	// Non-ASCII and astral characters survive the round trip and the UTF-16 lengths.
	f(request(guard.Input, "émoji 😀 secret-number 12345 ✓"), guard.Rewrite, custom.DefaultRule, "",
		map[int]string{0: "émoji 😀 secret-number [NUM] ✓"})
}

func TestContextAndTexts(t *testing.T) {
	c := newChecker(t, `export function checkOutput(o, ctx) {
		const d = o.texts.map(t => t.role + "/" + t.part + "=" + t.text).join(";");
		return { action: "block", reason: ctx.model + "|" + ctx.phase + "|" + d };
	}`)
	req := &guard.Request{Phase: guard.Output, Model: "claude-x", Texts: []guard.Text{
		{Role: guard.RoleAssistant, Part: guard.PartReasoning, Data: []byte("think")},
		{Role: guard.RoleAssistant, Part: guard.PartToolArguments, Data: []byte("{a}")},
		{Role: guard.RoleTool, Part: guard.PartToolResult, Data: []byte("r")},
		{Role: guard.RoleUser, Part: guard.PartToolKey, Data: []byte("k")},
		{Role: guard.RoleSystem, Part: guard.PartToolNumber, Data: []byte("1.5")},
		{Role: guard.RoleUser, Part: guard.PartContent, Data: nil},
	}}
	var v guard.Verdict
	if err := c.Check(context.Background(), req, &v); err != nil {
		t.Fatal(err)
	}
	want := "claude-x|output|assistant/reasoning=think;assistant/tool_arguments={a};tool/tool_result=r;user/tool_key=k;system/tool_number=1.5;user/content="
	if v.Message != want {
		t.Fatalf("got %q; want %q", v.Message, want)
	}
}

func TestHooks(t *testing.T) {
	c := newChecker(t, `export function checkInput() { return { action: "block" } }`)
	if !c.Runs(guard.Input) || c.Runs(guard.Output) {
		t.Fatalf("Runs(Input)=%v Runs(Output)=%v; want true false", c.Runs(guard.Input), c.Runs(guard.Output))
	}
	var v guard.Verdict
	if err := c.Check(context.Background(), request(guard.Output, "x"), &v); err != nil || v.Action != guard.Allow {
		t.Fatalf("output without a hook: %v %d; want allow", err, v.Action)
	}
	o := newChecker(t, `const f = () => null; export { f as checkOutput }`)
	if o.Runs(guard.Input) || !o.Runs(guard.Output) {
		t.Fatal("export { f as checkOutput } must run on output only")
	}
	// The loader's text check would see both names here; the real exports decide.
	b := newChecker(t, `// checkOutput is not exported
export function checkInput() {}`)
	if b.Runs(guard.Output) {
		t.Fatal("a hook named only in a comment must not run")
	}
}

func TestNewRejects(t *testing.T) {
	f := func(script string, timeoutMS, mem int64, want error, detail string) {
		t.Helper()
		g := guardrail(script, timeoutMS, mem, map[string]string{"token": "tok-VERYSECRET-123"})
		c, err := custom.New(g)
		if err == nil {
			c.(*custom.Checker).Close()
			t.Fatalf("New(%q) succeeded; want an error", script)
		}
		if !errors.Is(err, want) || !strings.Contains(err.Error(), detail) {
			t.Fatalf("New(%q) = %v; want %v containing %q", script, err, want, detail)
		}
		if strings.Contains(err.Error(), "VERYSECRET") {
			t.Fatalf("error leaks a secret: %v", err)
		}
		if !strings.Contains(err.Error(), `custom guardrail "js"`) {
			t.Fatalf("error does not name the guardrail: %v", err)
		}
	}
	f(`export function checkInput( {`, 5000, 16<<20, custom.ErrThrew, "SyntaxError")
	f(`export const x = 1`, 5000, 16<<20, custom.ErrThrew, "exports neither checkInput nor checkOutput")
	f(`function checkInput() {}`, 5000, 16<<20, custom.ErrThrew, "exports neither")
	f(`export const checkInput = 42`, 5000, 16<<20, custom.ErrThrew, "checkInput is not a function")
	f(`export function checkInput() {}; throw new Error("boom tok-VERYSECRET-123")`, 5000, 16<<20, custom.ErrThrew, "boom [REDACTED]")
	f(`import * as std from "std"; export function checkInput() {}`, 5000, 16<<20, custom.ErrThrew, "imports are not available")
	f(`import fs from "fs"; export function checkInput() {}`, 5000, 16<<20, custom.ErrThrew, "imports are not available")
	f(`while (true) {} export function checkInput() {}`, 100, 16<<20, custom.ErrTimeout, "loading")
	f(`const a = []; while (true) a.push("x".repeat(1e5) + a.length); export function checkInput() {}`, 60000, 4<<20, custom.ErrMemory, "loading")
	f(`await new Promise(() => {}); export function checkInput() {}`, 5000, 16<<20, custom.ErrEngine, "did not finish")
	f(`export function checkInput() {}`, 5000, 1, custom.ErrMemory, "")
}

func TestCheckErrors(t *testing.T) {
	c := newCheckerWith(t, guardrail(`
export function checkInput(input, ctx) {
  const k = input.texts[0].text;
  switch (k) {
  case "throw":   throw new TypeError("user text: " + input.texts[1].text + " " + ctx.secrets.token);
  case "throwstr": throw "a string " + ctx.secrets.token;
  case "custom":  { class MyErr extends Error {}; throw new MyErr(ctx.secrets.token); }
  case "null.x":  return null[input.texts[1].text];
  case "num":     return 42;
  case "action":  return { action: "deny" };
  case "reason":  return { action: "block", reason: 7 };
  case "long":    return { action: "block", reason: "x".repeat(1025) };
  case "rule":    return { action: "block", rule: "has space" };
  case "len":     return { action: "replace", texts: ["a"] };
  case "entry":   return { action: "replace", texts: [1, null] };
  case "getter":  return { get action() { throw new RangeError(ctx.secrets.token) } };
  case "recurse": { const f = n => f(n + 1) + 1; return f(0); }
  }
}
export async function checkOutput(o, ctx) {
  if (o.texts[0].text === "reject") throw new Error(ctx.secrets.token);
  if (o.texts[0].text === "never") return new Promise(() => {});
  return { action: "allow" };
}`, 60000, 16<<20, map[string]string{"token": "tok-VERYSECRET-123"}))
	f := func(phase guard.Phase, k string, want error, detail string) {
		t.Helper()
		var v guard.Verdict
		err := c.Check(context.Background(), request(phase, k, "PRIVATE-USER-TEXT"), &v)
		if !errors.Is(err, want) || !strings.Contains(err.Error(), detail) {
			t.Fatalf("%s: got %v; want %v with %q", k, err, want, detail)
		}
		if s := err.Error(); strings.Contains(s, "VERYSECRET") || strings.Contains(s, "PRIVATE") {
			t.Fatalf("%s: error leaks script data: %v", k, s)
		}
		if v.Action != guard.Allow || len(v.Masks) != 0 {
			t.Fatalf("%s: a failed check left a verdict: %+v", k, v)
		}
	}
	f(guard.Input, "throw", custom.ErrThrew, "TypeError at script:5:")
	f(guard.Input, "throwstr", custom.ErrThrew, "a non-Error value")
	f(guard.Input, "custom", custom.ErrThrew, "Error")
	f(guard.Input, "null.x", custom.ErrThrew, "TypeError at script:")
	f(guard.Input, "num", custom.ErrResult, "undefined, null or an object")
	f(guard.Input, "action", custom.ErrResult, `"allow", "block" or "replace"`)
	f(guard.Input, "reason", custom.ErrResult, "reason must be a string")
	f(guard.Input, "long", custom.ErrResult, "at most 1024")
	f(guard.Input, "rule", custom.ErrResult, "result.rule")
	f(guard.Input, "len", custom.ErrResult, "one entry per input text")
	f(guard.Input, "entry", custom.ErrResult, "a string, null or undefined")
	f(guard.Input, "getter", custom.ErrThrew, "RangeError")
	f(guard.Input, "recurse", custom.ErrThrew, "InternalError")
	f(guard.Output, "reject", custom.ErrThrew, "Error at script:")
	f(guard.Output, "never", custom.ErrResult, "did not settle")
	// A throw does not break the runtime: it goes back to the pool.
	if got := c.Started(); got != 1 {
		t.Fatalf("runtimes started = %d; want 1 (throws keep the runtime)", got)
	}
}

const loopOnDemand = `
export function checkInput(input) {
  const k = input.texts[0].text;
  if (k === "ping" && globalThis.stopped) return { action: "block", reason: "a stopped runtime was reused" };
  if (k !== "ping" && k !== "catchbomb") globalThis.stopped = true;
  if (k === "loop") while (true) {}
  if (k === "redos") return /^(a+)+$/.test("a".repeat(40) + "b");
  if (k === "bomb") { let a = []; while (true) a.push("x".repeat(1e6) + a.length); }
  if (k === "catchbomb") { try { let a = []; while (true) a.push("x".repeat(1e6) + a.length); } catch (e) { return { action: "allow" } } }
  if (k === "asyncloop") return (async () => { await null; while (true) {} })();
  return { action: "block", reason: "alive" };
}`

// alive checks that c answers again after a stop. The replacement runtime
// starts in the background; under -race a cold start can take longer than a
// short timeout_ms, so a timeout while it warms up is retried.
func alive(t *testing.T, c *custom.Checker) {
	t.Helper()
	var v guard.Verdict
	var err error
	for try := 0; try < 50; try++ {
		v.Reset()
		if err = c.Check(context.Background(), request(guard.Input, "ping"), &v); !errors.Is(err, custom.ErrTimeout) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil || v.Message != "alive" {
		t.Fatalf("runtime not usable after a stop: %v %q", err, v.Message)
	}
}

func TestInfiniteLoopStopped(t *testing.T) {
	const timeout = 150 * time.Millisecond
	c := newCheckerWith(t, guardrail(loopOnDemand, timeout.Milliseconds(), 16<<20, nil))
	goroutines := runtime.NumGoroutine()
	for _, k := range []string{"loop", "asyncloop", "redos"} {
		started := c.Started()
		var v guard.Verdict
		start := time.Now()
		err := c.Check(context.Background(), request(guard.Input, k), &v)
		took := time.Since(start)
		if !errors.Is(err, custom.ErrTimeout) {
			t.Fatalf("%s: got %v; want ErrTimeout", k, err)
		}
		// The slack is generous because the CPU is shared with other
		// builds; the stop itself comes within the engine's interrupt
		// polling interval (microseconds).
		if took < timeout || took > timeout+3*slowdown*time.Second {
			t.Fatalf("%s: stopped after %v; want about %v", k, took, timeout)
		}
		alive(t, c)
		// The stopped runtime was discarded, never handed out again (the
		// idle queue is FIFO, so these calls cycle through every idle
		// runtime), and a replacement was started.
		for range 2 * custom.PoolSize() {
			alive(t, c)
		}
		// The replacement starts in a background goroutine.
		for wait := 0; c.Started() <= started && wait < 100; wait++ {
			time.Sleep(20 * time.Millisecond)
		}
		if got := c.Started(); got <= started {
			t.Fatalf("%s: runtimes started %d -> %d; want a replacement", k, started, got)
		}
	}
	if n := runtime.NumGoroutine(); n > goroutines+1 {
		t.Fatalf("goroutines %d -> %d: something is left running", goroutines, n)
	}
}

func TestMemoryBombStopped(t *testing.T) {
	const limit = 16 << 20
	c := newCheckerWith(t, guardrail(loopOnDemand, 60000, limit, nil))
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	var v guard.Verdict
	err := c.Check(context.Background(), request(guard.Input, "bomb"), &v)
	if !errors.Is(err, custom.ErrMemory) {
		t.Fatalf("got %v; want ErrMemory", err)
	}
	runtime.ReadMemStats(&after)
	// The script's heap lives in the engine's own arena and is capped at
	// the limit; the Go heap must not have grown by anything like it.
	if grow := int64(after.HeapAlloc) - int64(before.HeapAlloc); grow > limit/4 {
		t.Fatalf("Go heap grew by %d bytes during a memory bomb", grow)
	}
	for range 2 * custom.PoolSize() {
		alive(t, c)
	}
	// A script that catches its own out-of-memory goes on within the
	// limit; what it allocated is garbage once the call returns.
	if err := c.Check(context.Background(), request(guard.Input, "catchbomb"), &v); err != nil {
		t.Fatalf("catchbomb: %v", err)
	}
	alive(t, c)
}

func TestContextCancelStopsScript(t *testing.T) {
	c := newCheckerWith(t, guardrail(loopOnDemand, 10000, 16<<20, nil))
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	start := time.Now()
	var v guard.Verdict
	err := c.Check(ctx, request(guard.Input, "loop"), &v)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v; want context.Canceled", err)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Fatalf("cancel took %v to stop the script", took)
	}
	ctx2, cancel2 := context.WithTimeout(context.Background(), 80*time.Millisecond)
	defer cancel2()
	err = c.Check(ctx2, request(guard.Input, "loop"), &v)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v; want the context's deadline", err)
	}
	alive(t, c)
}

func TestSecrets(t *testing.T) {
	c := newCheckerWith(t, guardrail(`
export function checkInput(input, ctx) {
  if (Object.isFrozen(ctx.secrets) !== true) return { action: "block", reason: "secrets not frozen" };
  if (ctx.secrets.api_key !== "sk-VERYSECRET-1") return { action: "block", reason: "wrong secret" };
  if (input.texts[0].text === "echo") return { action: "block", reason: "key=" + ctx.secrets.api_key + " other=" + ctx.secrets.other };
  if (input.texts[0].text === "rule") return { action: "block", rule: ctx.secrets.api_key };
  return null;
}`, 5000, 16<<20, map[string]string{"api_key": "sk-VERYSECRET-1", "other": "o-2"}))
	var v guard.Verdict
	if err := c.Check(context.Background(), request(guard.Input, "hi"), &v); err != nil || v.Action != guard.Allow {
		t.Fatalf("script did not see its secrets: %v %q", err, v.Message)
	}
	if err := c.Check(context.Background(), request(guard.Input, "echo"), &v); err != nil {
		t.Fatal(err)
	}
	if v.Message != "key=[REDACTED] other=[REDACTED]" {
		t.Fatalf("block reason = %q; want secrets scrubbed", v.Message)
	}
	v.Reset()
	if err := c.Check(context.Background(), request(guard.Input, "rule"), &v); err != nil {
		t.Fatal(err)
	}
	if v.Rule != custom.DefaultRule {
		t.Fatalf("block rule = %q; want the default for a rule holding a secret", v.Rule)
	}
}

func TestNoHostAccess(t *testing.T) {
	c := newChecker(t, `
export function checkInput() {
  const names = ["fetch", "require", "process", "std", "os", "console", "print", "XMLHttpRequest", "setTimeout", "WebSocket",
    "__gw_run", "__gw_settled", "__gw_boot", "__gw_status"];
  const found = names.filter(n => typeof globalThis[n] !== "undefined");
  return found.length ? { action: "block", reason: found.join(",") } : null;
}`)
	var v guard.Verdict
	if err := c.Check(context.Background(), request(guard.Input, "x"), &v); err != nil || v.Action != guard.Allow {
		t.Fatalf("host objects reachable from a script: %v %q", err, v.Message)
	}
}

func TestConcurrentChecks(t *testing.T) {
	c := newChecker(t, wordFilter)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var v guard.Verdict
			for i := range 100 {
				v.Reset()
				n := strconv.Itoa(g*1000 + i)
				var want guard.Action
				var req *guard.Request
				switch i % 3 {
				case 0:
					req, want = request(guard.Input, "hello "+n), guard.Allow
				case 1:
					req, want = request(guard.Input, "forbidden "+n), guard.Block
				default:
					req, want = request(guard.Input, "secret-number 12345 "+n), guard.Rewrite
				}
				if err := c.Check(context.Background(), req, &v); err != nil {
					errs <- err
					return
				}
				if v.Action != want || want == guard.Rewrite && string(v.Masks[0].Data) != "secret-number [NUM] [NUM]" && !strings.HasSuffix(string(v.Masks[0].Data), " "+n) {
					errs <- errors.New("wrong verdict for " + n)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if got, limit := c.Started(), int64(custom.PoolSize()); got > limit {
		t.Fatalf("runtimes started = %d; want at most the pool size %d", got, limit)
	}
}

func TestPoolReuse(t *testing.T) {
	c := newChecker(t, wordFilter)
	var v guard.Verdict
	for range 500 {
		v.Reset()
		if err := c.Check(context.Background(), request(guard.Input, "hello"), &v); err != nil {
			t.Fatal(err)
		}
	}
	if got := c.Started(); got != 1 {
		t.Fatalf("runtimes started = %d; want 1 for sequential calls", got)
	}
}

func TestClose(t *testing.T) {
	c := newChecker(t, wordFilter)
	c.Close()
	var v guard.Verdict
	if err := c.Check(context.Background(), request(guard.Input, "x"), &v); !errors.Is(err, custom.ErrClosed) {
		t.Fatalf("Check after Close: %v; want ErrClosed", err)
	}
}

func TestPoolExhaustedWaits(t *testing.T) {
	c := newChecker(t, `export function checkInput() {
		const end = Date.now() + 20; while (Date.now() < end) {}
		return { action: "block", reason: "done" };
	}`)
	n := 2 * custom.PoolSize()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var v guard.Verdict
			if err := c.Check(context.Background(), request(guard.Input, "x"), &v); err != nil || v.Message != "done" {
				errs <- errors.New("call failed while waiting for a runtime: " + strconv.Quote(v.Message))
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if got := c.Started(); got > int64(custom.PoolSize()) {
		t.Fatalf("runtimes started = %d; want at most %d", got, custom.PoolSize())
	}
	// With every runtime busy, the wait counts toward timeout_ms.
	short := newCheckerWith(t, guardrail(`export function checkInput() { const end = Date.now() + 300; while (Date.now() < end) {} }`, 100, 16<<20, nil))
	var timeouts sync.WaitGroup
	var failed atomic.Int64
	for range custom.PoolSize() + 1 {
		timeouts.Add(1)
		go func() {
			defer timeouts.Done()
			var v guard.Verdict
			err := short.Check(context.Background(), request(guard.Input, "x"), &v)
			if errors.Is(err, custom.ErrTimeout) {
				failed.Add(1)
			} else {
				t.Logf("not a timeout: %v", err)
			}
		}()
	}
	timeouts.Wait()
	if got := failed.Load(); got != int64(custom.PoolSize()+1) {
		t.Fatalf("%d of %d calls timed out; want all (each runs past timeout_ms)", got, custom.PoolSize()+1)
	}
}

// TestSlowNativeLoopStopped: loops whose iterations are slow native calls
// poll the engine's interrupt handler rarely; the watchdog must stop them
// at timeout_ms all the same (without it the first one ran for minutes).
func TestSlowNativeLoopStopped(t *testing.T) {
	// timeout_ms also bounds loading the script, which took over 100 ms on
	// a loaded CI machine under -race; the overrun guarded against here is
	// minutes, so a second still tells it.
	const timeout = time.Second
	for _, body := range []string{
		`const s = "x".repeat(1e6); while (true) s.toUpperCase();`,
		`const s = "x".repeat(1e6); while (true) s.indexOf("y");`,
		`const a = Array.from({length: 4e5}, (_, i) => (i * 7919) % 400000); while (true) a.slice().sort();`,
		`const a = Array.from({length: 1e5}, (_, i) => "k" + i); while (true) JSON.parse(JSON.stringify(a));`,
	} {
		c := newCheckerWith(t, guardrail("export function checkInput() { "+body+" }", timeout.Milliseconds(), 256<<20, nil)) // room for a second of garbage: the timeout must be what stops it
		var v guard.Verdict
		start := time.Now()
		err := c.Check(context.Background(), request(guard.Input, "x"), &v)
		took := time.Since(start)
		if !errors.Is(err, custom.ErrTimeout) {
			t.Fatalf("%s: got %v; want ErrTimeout", body, err)
		}
		// Generous slack for the shared CPU; the failure mode this guards
		// against overran by minutes.
		if took > timeout+3*slowdown*time.Second {
			t.Fatalf("%s: stopped after %v; want about %v", body, took, timeout)
		}
	}
}

// TestRetireFreesWarmRuntimes: a retired checker (its snapshot replaced)
// keeps no runtime warm, and still answers calls made through it.
func TestRetireFreesWarmRuntimes(t *testing.T) {
	c := newChecker(t, `export function checkInput(req) { return {action: "allow"}; }`)
	var v guard.Verdict
	for range 3 {
		if err := c.Check(context.Background(), request(guard.Input, "x"), &v); err != nil {
			t.Fatal(err)
		}
	}
	if n := c.Started(); n != 1 {
		t.Fatalf("%d runtimes started before Retire; want 1 (warm reuse)", n)
	}
	c.Retire()
	for i := range 2 {
		if err := c.Check(context.Background(), request(guard.Input, "x"), &v); err != nil {
			t.Fatalf("call after Retire: %v", err)
		}
		if n := c.Started(); n != int64(2+i) {
			t.Fatalf("%d runtimes started after %d calls past Retire; want %d (none kept warm)", n, i+1, 2+i)
		}
	}
}
