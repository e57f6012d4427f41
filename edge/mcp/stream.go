package mcp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"sync"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// Bounds of a session's replay buffer: the SSE events gw keeps so a caller
// whose stream broke can resume it with Last-Event-ID. The oldest events
// go first when either bound is passed.
const (
	ReplayEvents = 256
	ReplayBytes  = 1 << 20
)

// keepAliveEvery is how often an idle SSE stream gets a comment line: it
// finds callers that left and keeps intermediaries from closing the stream.
const keepAliveEvery = 20 * time.Second

// standaloneStream is the ID of the session's GET stream (messages not
// related to a caller request); POST streams are numbered from 1.
const standaloneStream = 0

var (
	unmatchedResponses = metrics.NewCounter("gw_mcp_unmatched_responses_total")
	droppedServerMsgs  = metrics.NewCounter("gw_mcp_server_messages_dropped_total")
)

// Modes of a POST stream: undecided until the first server message (SSE)
// or the final answer without one (JSON).
const (
	modeUndecided = iota
	modeJSON
	modeSSE
)

// event is one SSE event: a JSON-RPC message on one stream of a session.
type event struct {
	stream, seq uint64
	data        []byte
	final       bool // the POST's answer: its stream ends after it
}

// outStream is one stream of server-to-caller messages of a session: the
// standalone GET stream or the SSE answer of one POST.
type outStream struct {
	id      uint64
	server  string // the upstream server the POST went to; "" for several (lists)
	token   string // the caller's progressToken (raw JSON); "" for none
	seq     uint64 // last event number given out
	evicted uint64 // last event number dropped from the replay buffer
	mode    int
	decided chan struct{} // closed when mode leaves modeUndecided
	wake    chan struct{} // cap 1: a new event, an end or a new writer
	gen     uint64        // writer generation: a newer writer takes over
	done    bool          // the final event is out (POST streams)
	start   func()        // run (go) when a POST stream becomes SSE: its writer
}

// hub holds a session's streams, the replay buffer and the server requests
// waiting for the caller's answer.
type hub struct {
	mu         sync.Mutex
	streams    map[uint64]*outStream // live streams and ended ones with events still buffered
	events     []event               // replay buffer, oldest first
	bytes      int
	nextStream uint64
	nextReq    uint64
	pending    map[string]chan *jsonrpc.Response // by gw-given request ID
	closed     bool
	closedCh   chan struct{}
	ending     bool // shutting down: the standalone stream ends, POST streams end with their answers
}

func newHub() *hub {
	h := &hub{streams: map[uint64]*outStream{}, pending: map[string]chan *jsonrpc.Response{}, closedCh: make(chan struct{})}
	h.streams[standaloneStream] = &outStream{id: standaloneStream, mode: modeSSE, wake: make(chan struct{}, 1)}
	return h
}

// open starts the stream of a POST whose request goes to server ("" for
// several) with the caller's progress token (raw JSON, may be empty).
// start runs on a goroutine of its own when the stream becomes SSE.
func (h *hub) open(server string, token []byte, start func()) *outStream {
	st := &outStream{server: server, token: string(token), decided: make(chan struct{}), wake: make(chan struct{}, 1), start: start}
	h.mu.Lock()
	h.nextStream++
	st.id = h.nextStream
	h.streams[st.id] = st
	h.mu.Unlock()
	return st
}

// related finds the stream a server message about server belongs to: the
// POST that carries the progress token, else the newest POST still being
// served that went to server, else the standalone stream. Only streams
// that can carry it count: the standalone one needs a writer (or wait).
func (h *hub) related(server string, token string) *outStream {
	h.mu.Lock()
	defer h.mu.Unlock()
	var best *outStream
	for _, st := range h.streams {
		if st.id == standaloneStream || st.done || st.mode == modeJSON {
			continue
		}
		if token != "" {
			if st.token == token {
				return st
			}
			continue
		}
		if (st.server == server || st.server == "") && (best == nil || st.id > best.id) {
			best = st
		}
	}
	if best == nil && token == "" {
		best = h.streams[standaloneStream]
	}
	return best
}

// attached reports whether a writer serves st (the standalone stream).
func (h *hub) attached(st *outStream) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return st.gen > 0 && st.gen&1 == 1
}

// emit appends a message to st. A POST stream still undecided becomes an
// SSE answer; for the final answer of an undecided stream emit reports
// false: the POST is answered with JSON and nothing is kept.
func (h *hub) emit(st *outStream, data []byte, final bool) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if st.done || st.mode == modeJSON || h.closed {
		return false // the stream is over (or was answered with JSON)
	}
	if st.mode == modeUndecided {
		if final {
			st.mode = modeJSON
			close(st.decided)
			delete(h.streams, st.id)
			return false
		}
		st.mode = modeSSE
		close(st.decided)
		if st.start != nil {
			go st.start()
		}
	}
	st.seq++
	h.events = append(h.events, event{stream: st.id, seq: st.seq, data: bytes.Clone(data), final: final})
	h.bytes += len(data)
	if final {
		st.done = true
	}
	for len(h.events) > ReplayEvents || h.bytes > ReplayBytes && len(h.events) > 1 {
		e := h.events[0]
		h.events[0] = event{}
		h.events = h.events[1:]
		h.bytes -= len(e.data)
		if o := h.streams[e.stream]; o != nil {
			o.evicted = e.seq
			if o.done && o.evicted == o.seq {
				delete(h.streams, o.id)
			}
		}
	}
	wakeUp(st)
	return true
}

func wakeUp(st *outStream) {
	select {
	case st.wake <- struct{}{}:
	default:
	}
}

// close ends every stream and fails the waiting server requests.
func (h *hub) close() {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return
	}
	h.closed = true
	close(h.closedCh)
	for _, st := range h.streams {
		if st.mode == modeUndecided {
			st.mode = modeJSON
			close(st.decided)
			delete(h.streams, st.id)
		}
		wakeUp(st)
	}
	h.mu.Unlock()
}

// errNoStream: a server request has no way to the caller.
var errNoStream = errors.New("the caller has no open stream for server requests")

// request sends a server-to-caller request on st under a gw-given ID and
// waits for the caller's answer, ctx's end or the session's.
func (h *hub) request(ctx context.Context, st *outStream, method string, params []byte) (*jsonrpc.Response, error) {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil, errors.New("the caller's MCP session was closed")
	}
	h.nextReq++
	id := "gw-" + strconv.FormatUint(h.nextReq, 10)
	ch := make(chan *jsonrpc.Response, 1)
	h.pending[id] = ch
	h.mu.Unlock()
	defer func() {
		h.mu.Lock()
		delete(h.pending, id)
		h.mu.Unlock()
	}()
	b := appendRequest(nil, id, method, params)
	if !h.emit(st, b, false) {
		return nil, errNoStream
	}
	select {
	case r := <-ch:
		return r, nil
	case <-ctx.Done():
		return nil, errors.New("the caller did not answer " + method + " in time: " + ctx.Err().Error())
	case <-h.closedCh:
		return nil, errors.New("the caller's MCP session was closed before it answered " + method)
	}
}

// deliver hands the caller's answer to the server request waiting for it.
// Unknown and repeated IDs are counted and dropped.
func (h *hub) deliver(r *jsonrpc.Response) {
	id, _ := r.ID.Raw().(string)
	h.mu.Lock()
	ch := h.pending[id]
	delete(h.pending, id)
	h.mu.Unlock()
	if ch == nil {
		unmatchedResponses.Inc()
		return
	}
	ch <- r
}

// appendRequest appends a JSON-RPC request (params raw JSON, may be empty).
func appendRequest(b []byte, id, method string, params []byte) []byte {
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = strconv.AppendQuote(b, id)
	return appendMethodParams(b, method, params)
}

// appendNotification appends a JSON-RPC notification.
func appendNotification(b []byte, method string, params []byte) []byte {
	b = append(b, `{"jsonrpc":"2.0"`...)
	return appendMethodParams(b, method, params)
}

func appendMethodParams(b []byte, method string, params []byte) []byte {
	b = append(b, `,"method":`...)
	b = strconv.AppendQuote(b, method)
	if len(params) > 0 && string(params) != "null" {
		b = append(b, `,"params":`...)
		b = append(b, params...)
	}
	return append(b, '}')
}

// FormatEventID is the SSE id of event seq of stream: "<stream>_<seq>",
// unique within the session.
func FormatEventID(b []byte, stream, seq uint64) []byte {
	b = strconv.AppendUint(b, stream, 10)
	b = append(b, '_')
	return strconv.AppendUint(b, seq, 10)
}

// ParseEventID reads a Last-Event-ID written by FormatEventID.
func ParseEventID(s []byte) (stream, seq uint64, ok bool) {
	i := bytes.IndexByte(s, '_')
	if i <= 0 || i == len(s)-1 {
		return 0, 0, false
	}
	stream, ok1 := parseDecimal(s[:i])
	seq, ok2 := parseDecimal(s[i+1:])
	return stream, seq, ok1 && ok2
}

// parseDecimal reads a canonical unsigned decimal (no sign, no leading
// zero, no overflow) so one event has one spelling.
func parseDecimal(s []byte) (uint64, bool) {
	if len(s) == 0 || len(s) > 20 || len(s) > 1 && s[0] == '0' {
		return 0, false
	}
	var n uint64
	for _, c := range s {
		if c < '0' || c > '9' {
			return 0, false
		}
		d := uint64(c - '0')
		if n > (1<<64-1-d)/10 {
			return 0, false
		}
		n = n*10 + d
	}
	return n, true
}

// errReplayGone: the events after a Last-Event-ID are no longer all held.
var errReplayGone = errors.New("the events after Last-Event-ID are no longer held")

// resume finds the stream a Last-Event-ID belongs to and checks that every
// event after it is still held.
func (h *hub) resume(stream, seq uint64) (*outStream, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if stream > h.nextStream {
		return nil, errors.New("Last-Event-ID names no stream of this session")
	}
	st := h.streams[stream]
	if st == nil {
		return nil, errReplayGone
	}
	if seq > st.seq {
		return nil, errors.New("Last-Event-ID names an event not sent yet")
	}
	if st.evicted > seq {
		return nil, errReplayGone
	}
	return st, nil
}

// startAt is where a new GET of the standalone stream begins: after the
// events already given out (a stream without Last-Event-ID carries only
// new messages).
func (h *hub) startAt(st *outStream) uint64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return st.seq
}

// write sends st's events after seq to w until the stream ends (a POST's
// final answer), the session closes, the caller goes or a newer writer
// takes the stream over. touch marks the session used.
func (h *hub) write(w *bufio.Writer, st *outStream, seq uint64, touch func()) {
	h.mu.Lock()
	st.gen++
	if st.gen&1 == 0 {
		st.gen++ // odd: attached
	}
	gen := st.gen
	h.mu.Unlock()
	wakeUp(st) // an older writer of the stream ends
	defer func() {
		h.mu.Lock()
		if st.gen == gen {
			st.gen++ // even: no writer
		}
		h.mu.Unlock()
	}()
	// The headers go out now (a caller waits for them before it reads;
	// fasthttp sends them with the first body bytes): a comment line.
	w.WriteString(": open\n\n")
	if w.Flush() != nil {
		return
	}
	timer := time.NewTimer(keepAliveEvery)
	defer timer.Stop()
	var batch []event
	var idb [48]byte
	for {
		h.mu.Lock()
		batch = batch[:0]
		for _, e := range h.events {
			if e.stream == st.id && e.seq > seq {
				batch = append(batch, e)
			}
		}
		ended := h.closed || st.gen != gen || h.ending && st.id == standaloneStream || st.done && len(batch) == 0 && (seq >= st.seq || st.evicted >= st.seq)
		h.mu.Unlock()
		for _, e := range batch {
			w.WriteString("id: ")
			w.Write(FormatEventID(idb[:0], e.stream, e.seq))
			w.WriteString("\nevent: message\n")
			writeData(w, e.data)
			seq = e.seq
			if e.final {
				w.Flush()
				return
			}
		}
		if len(batch) > 0 {
			if w.Flush() != nil {
				return
			}
			touch()
		}
		if ended {
			return
		}
		select {
		case <-st.wake:
		case <-timer.C:
			w.WriteString(": keep-alive\n\n")
			if w.Flush() != nil {
				return
			}
			touch()
			timer.Reset(keepAliveEvery)
		}
	}
}

// writeData writes an SSE data field; a payload with line breaks (JSON
// allows none outside strings, so this is defensive) takes several lines.
func writeData(w *bufio.Writer, data []byte) {
	for {
		i := bytes.IndexAny(data, "\r\n")
		w.WriteString("data: ")
		if i < 0 {
			w.Write(data)
			w.WriteString("\n\n")
			return
		}
		w.Write(data[:i])
		w.WriteByte('\n')
		data = data[i+1:]
	}
}

// marshalParams encodes a server message's params for the caller.
func marshalParams(p any) ([]byte, error) {
	if p == nil {
		return nil, nil
	}
	return json.Marshal(p)
}

// streams0 is the standalone stream.
func (h *hub) streams0() *outStream {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.streams[standaloneStream]
}

// end ends the standalone stream (its caller may resume it elsewhere).
func (h *hub) end() {
	h.mu.Lock()
	h.ending = true
	if st := h.streams[standaloneStream]; st != nil {
		wakeUp(st)
	}
	h.mu.Unlock()
}
