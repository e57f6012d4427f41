package statusui

import (
	"bufio"
	"embed"
	"strings"
	"sync"
	"time"

	"github.com/valyala/fasthttp"
)

//go:embed assets
var assets embed.FS

// Interval is how often /ui/events pushes a new state.
const Interval = time.Second

// UI serves the page's static bundle and its event stream. Render builds
// the current state as JSON; it is called once per push per open page.
type UI struct {
	Render func() ([]byte, error)

	closeOnce sync.Once
	done      chan struct{}
}

// New returns a UI over render.
func New(render func() ([]byte, error)) *UI {
	return &UI{Render: render, done: make(chan struct{})}
}

// Close ends every open event stream (before the status server shuts
// down, which would otherwise wait for them).
func (u *UI) Close() { u.closeOnce.Do(func() { close(u.done) }) }

// Handle serves /ui, /ui/ and /ui/* and reports whether path was one of them.
func (u *UI) Handle(ctx *fasthttp.RequestCtx, path string) bool {
	if path != "/ui" && !strings.HasPrefix(path, "/ui/") {
		return false
	}
	// The page is same-origin only: no framing, no sniffing, no remote code.
	h := &ctx.Response.Header
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; connect-src 'self'")
	if !ctx.IsGet() && !ctx.IsHead() {
		h.Set("Allow", "GET, HEAD")
		ctx.SetStatusCode(fasthttp.StatusMethodNotAllowed)
		ctx.SetContentType("text/plain; charset=utf-8")
		ctx.SetBodyString("method not allowed\n")
		return true
	}
	switch path {
	case "/ui":
		ctx.Redirect("/ui/", fasthttp.StatusFound)
	case "/ui/", "/ui/index.html":
		u.file(ctx, "assets/index.html", "text/html; charset=utf-8")
	case "/ui/app.js":
		u.file(ctx, "assets/app.js", "text/javascript; charset=utf-8")
	case "/ui/style.css":
		u.file(ctx, "assets/style.css", "text/css; charset=utf-8")
	case "/ui/state":
		b, err := u.Render()
		if err != nil {
			ctx.SetStatusCode(fasthttp.StatusInternalServerError)
			ctx.SetContentType("text/plain; charset=utf-8")
			ctx.SetBodyString("cannot render the status\n")
			return true
		}
		h.Set("Cache-Control", "no-store")
		ctx.SetContentType("application/json")
		ctx.SetBody(b)
	case "/ui/events":
		u.events(ctx)
	default:
		ctx.SetStatusCode(fasthttp.StatusNotFound)
		ctx.SetContentType("text/plain; charset=utf-8")
		ctx.SetBodyString("not found\n")
	}
	return true
}

func (u *UI) file(ctx *fasthttp.RequestCtx, name, ctype string) {
	b, err := assets.ReadFile(name)
	if err != nil { // cannot happen: the names are the embedded files
		ctx.SetStatusCode(fasthttp.StatusNotFound)
		return
	}
	ctx.Response.Header.Set("Cache-Control", "no-cache")
	ctx.SetContentType(ctype)
	ctx.SetBody(b)
}

// events streams the state as server-sent events: one `state` event at
// once, then one per Interval, until the page goes away or Close.
func (u *UI) events(ctx *fasthttp.RequestCtx) {
	h := &ctx.Response.Header
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	ctx.SetContentType("text/event-stream")
	done := u.done
	ctx.SetBodyStreamWriter(func(w *bufio.Writer) {
		t := time.NewTicker(Interval)
		defer t.Stop()
		for {
			b, err := u.Render()
			if err == nil {
				w.WriteString("event: state\ndata: ")
				w.Write(b)
				w.WriteString("\n\n")
			}
			if w.Flush() != nil {
				return // the page closed the connection
			}
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	})
}
