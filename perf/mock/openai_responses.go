package mock

import (
	"bufio"
	"bytes"
	"errors"
	"strconv"
	"sync"
	"time"

	"github.com/valyala/fasthttp"

	"gw/sse/rawjson"
)

// OpenAI Responses: POST .../responses, with any prefix. The request is read in place
// with rawjson; the answer is rendered from static fragments. Wire format: protocols.md §2
// and testdata/openai_responses_*.
//
// A stream is, as recorded in testdata/openai_responses_text.sse, every event with its
// sequence_number:
//
//	response.created, response.in_progress,
//	response.output_item.added (message), response.content_part.added,
//	response.output_text.delta × chunks, response.output_text.done,
//	response.content_part.done, response.output_item.done, response.completed
//
// The message item opens with the first delta, as the model starts to write. With tool
// calls, each call is a function_call item, as in the second stream of
// testdata/openai_responses_reasoning_summary_multi_request.jsonl: response.output_item.added, its
// argument fragments as response.function_call_arguments.delta, then
// response.function_call_arguments.done and response.output_item.done.

var openAIResponsesRoute = route{
	method:      fasthttp.MethodPost,
	match:       func(path []byte) bool { return bytes.HasSuffix(path, strResponsesPath) },
	serve:       (*Server).serveOpenAIResponses,
	appendError: appendOpenAIError,
}

var strResponsesPath = []byte("/responses")

// Interface guards.
var _ streamBody = (*responsesAnswer)(nil)

// Pre-rendered Responses fragments.
const (
	// respSettings follows "output" in every response object: settings the mock does
	// not read, as OpenAI reports its defaults.
	respSettings = `,"parallel_tool_calls":true,"previous_response_id":null,"prompt_cache_key":null,` +
		`"prompt_cache_retention":null,"reasoning":{"effort":null,"summary":null},"safety_identifier":null,` +
		`"service_tier":"default","store":true,"temperature":1.0,"text":{"format":{"type":"text"},"verbosity":"medium"},` +
		`"tool_choice":"auto","tools":[],"top_logprobs":0,"top_p":1.0,"truncation":"disabled","usage":`
	respEnd = `,"user":null,"metadata":{}}`

	respErrorCode    = "server_is_overloaded"
	respErrorMessage = "The server is overloaded. Please try again later. (mock: stream_error_after)"

	respTextDeltaOpen  = "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"sequence_number\":"
	respTextDeltaClose = `","logprobs":[]}` + "\n\n"
	respEmptyPart      = `{"type":"output_text","annotations":[],"logprobs":[],"text":""}`
)

// Messages of the 400 answers, worded as OpenAI words them.
const (
	msgResponsesNoModel  = "Missing required parameter: 'model'."
	msgResponsesBadInput = "Invalid type for 'input': expected one of a string or an array of input items."
)

// Errors of ParseResponsesRequest besides ErrBadJSON. Each message is that of the mock's
// 400 answer.
var (
	ErrResponsesNoModel  = errors.New(msgResponsesNoModel)  // model is absent, empty or not a string
	ErrResponsesBadInput = errors.New(msgResponsesBadInput) // input is neither a string nor an array
)

// ResponsesRequestInfo is what the mock reads from a Responses request body. Slices alias
// the body.
type ResponsesRequestInfo struct {
	// Model is the contents of the "model" string with its escapes kept.
	Model  []byte
	Stream bool // "stream" is true
	// Input is the number of input items: 1 for a string, the length of an array, 0 when
	// "input" is absent (a request may continue a stored conversation instead).
	Input    int
	HasTools bool // "tools" is an array with at least one element

	toolNames  [maxToolNames][]byte
	nToolNames int
}

// ToolNames returns the "name" of the first declared tools (function and custom tools;
// hosted tools have none), in order, escapes kept. At most 16 names are kept.
func (r *ResponsesRequestInfo) ToolNames() [][]byte { return r.toolNames[:r.nToolNames] }

// ParseResponsesRequest reads body as the mock reads a POST /v1/responses request, with
// gw/sse/rawjson: keys compare decoded and the last of repeated members wins. model is
// required; input, when present, is a string or an array. The error is ErrBadJSON,
// ErrResponsesNoModel or ErrResponsesBadInput; its message is that of the 400 answer.
// Members are checked in order: a "model" that is not a string or an "input" of another
// kind ends the read with its error, even if the body is malformed further on.
func ParseResponsesRequest(body []byte) (ResponsesRequestInfo, error) {
	var r ResponsesRequestInfo
	err := r.parse(body)
	return r, err
}

// Top-level members of a Responses request that the mock reads, indexes into
// responsesMembers.
const (
	responsesModel = iota
	responsesStream
	responsesInput
	responsesTools
)

var responsesMembers = []string{responsesModel: "model", responsesStream: "stream",
	responsesInput: "input", responsesTools: "tools"}

// parse is ParseResponsesRequest in place; it does not allocate.
func (r *ResponsesRequestInfo) parse(body []byte) error {
	*r = ResponsesRequestInfo{}
	hasModel := false
	var bad error
	err := rawjson.ForEachKey(body, func(key, val []byte, kind rawjson.Kind) bool {
		switch memberIndex(key, responsesMembers) {
		case responsesModel:
			if kind != rawjson.String {
				bad = ErrResponsesNoModel
				return false
			}
			r.Model = val[1 : len(val)-1]
			hasModel = len(r.Model) > 0
		case responsesStream:
			r.Stream = kind == rawjson.True
		case responsesInput:
			switch kind {
			case rawjson.String:
				r.Input = 1
			case rawjson.Array:
				n, ok := countElems(val)
				if !ok {
					bad = ErrResponsesBadInput
					return false
				}
				r.Input = n
			default:
				bad = ErrResponsesBadInput
				return false
			}
		case responsesTools:
			r.HasTools, r.nToolNames = readNamedTools(val, &r.toolNames)
		}
		return true
	})
	switch {
	case bad != nil:
		return bad
	case err != nil:
		return ErrBadJSON
	case !hasModel:
		return ErrResponsesNoModel
	}
	return nil
}

// responsesAnswer renders one Responses answer, buffered or streamed. It is pooled; it
// implements streamBody.
type responsesAnswer struct {
	answerBase
	req ResponsesRequestInfo // valid only between parse and prepare

	stream bool
	seq    int    // sequence_number of the next event
	head   []byte // text delta middle: `,"item_id":"msg_mock_<id>","output_index":0,"content_index":0,"delta":"`
}

var responsesAnswerPool = sync.Pool{New: func() any { return new(responsesAnswer) }}

func acquireResponsesAnswer() *responsesAnswer {
	return responsesAnswerPool.Get().(*responsesAnswer)
}

func (a *responsesAnswer) release() {
	a.trim()
	responsesAnswerPool.Put(a)
}

func (s *Server) serveOpenAIResponses(ctx *fasthttp.RequestCtx, k *Knobs) {
	s.serveFormat(ctx, k, acquireResponsesAnswer(), appendOpenAIError, setRequestID)
}

func (a *responsesAnswer) load(s *Server, k *Knobs, body []byte) string {
	if err := a.req.parse(body); err != nil {
		return err.Error()
	}
	return a.prepare(s, k, len(body))
}

func (a *responsesAnswer) streaming() bool { return a.stream }
func (a *responsesAnswer) appendBuffered(dst []byte) []byte {
	return a.appendResponse(dst, respCompleted)
}
func (a *responsesAnswer) requestID() uint64 { return a.id }

// prepare copies what the answer needs out of a.req, so that the answer outlives the
// request body. It returns the message of a 400 answer, or "".
func (a *responsesAnswer) prepare(s *Server, k *Knobs, bodyLen int) string {
	r := &a.req
	if msg := a.prepareBase(s, k, bodyLen, r.Model, r.HasTools, r.ToolNames()); msg != "" {
		return msg
	}
	a.stream = r.Stream
	if a.stream {
		h := append(a.head[:0], `,"item_id":"`...)
		h = a.appendMessageID(h)
		a.head = append(h, `","output_index":0,"content_index":0,"delta":"`...)
	}
	a.req = ResponsesRequestInfo{}
	return ""
}

// States of the response object.
const (
	respInProgress = iota
	respCompleted
	respFailed
)

var respStatusNames = [...]string{respInProgress: "in_progress", respCompleted: "completed", respFailed: "failed"}

// appendResponse renders the response object in state: in progress (no output, usage
// null), completed (output and usage) or failed (error, no output, usage null).
func (a *responsesAnswer) appendResponse(dst []byte, state int) []byte {
	dst = append(dst, `{"id":"resp_mock_`...)
	dst = strconv.AppendUint(dst, a.id, 10)
	dst = append(dst, `","object":"response","created_at":`...)
	dst = strconv.AppendInt(dst, a.created, 10)
	dst = append(dst, `,"status":"`...)
	dst = append(dst, respStatusNames[state]...)
	dst = append(dst, `","background":false,"completed_at":`...)
	if state == respCompleted {
		dst = strconv.AppendInt(dst, time.Now().Unix(), 10)
	} else {
		dst = append(dst, "null"...)
	}
	dst = append(dst, `,"error":`...)
	if state == respFailed {
		dst = append(dst, `{"code":"`+respErrorCode+`","message":"`+respErrorMessage+`"}`...)
	} else {
		dst = append(dst, "null"...)
	}
	dst = append(dst, `,"incomplete_details":null,"instructions":null,"max_output_tokens":null,"max_tool_calls":null,"model":"`...)
	dst = append(dst, a.model...)
	dst = append(dst, `","output":[`...)
	if state == respCompleted {
		if a.toolCalls > 0 {
			for c := 0; c < a.toolCalls; c++ {
				if c > 0 {
					dst = append(dst, ',')
				}
				dst = a.appendFunctionCall(dst, c, true)
			}
		} else {
			dst = a.appendMessageItem(dst, true)
		}
	}
	dst = append(dst, "]"+respSettings...)
	if state == respCompleted {
		dst = a.appendUsage(dst)
	} else {
		dst = append(dst, "null"...)
	}
	return append(dst, respEnd...)
}

func (a *responsesAnswer) appendUsage(dst []byte) []byte {
	out := a.outputTokens()
	dst = append(dst, `{"input_tokens":`...)
	dst = appendInt(dst, a.promptTokens)
	dst = append(dst, `,"input_tokens_details":{"cached_tokens":0},"output_tokens":`...)
	dst = appendInt(dst, out)
	dst = append(dst, `,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":`...)
	dst = appendInt(dst, a.promptTokens+out)
	return append(dst, '}')
}

func (a *responsesAnswer) appendMessageID(dst []byte) []byte {
	dst = append(dst, "msg_mock_"...)
	return strconv.AppendUint(dst, a.id, 10)
}

// appendMessageItem renders the message output item, in progress (no content yet) or
// completed.
func (a *responsesAnswer) appendMessageItem(dst []byte, completed bool) []byte {
	dst = append(dst, `{"id":"`...)
	dst = a.appendMessageID(dst)
	if !completed {
		return append(dst, `","type":"message","status":"in_progress","content":[],"role":"assistant"}`...)
	}
	dst = append(dst, `","type":"message","status":"completed","content":[`...)
	dst = a.appendTextPart(dst)
	return append(dst, `],"role":"assistant"}`...)
}

// appendTextPart renders the complete output_text content part.
func (a *responsesAnswer) appendTextPart(dst []byte) []byte {
	dst = append(dst, `{"type":"output_text","annotations":[],"logprobs":[],"text":"`...)
	dst = appendFiller(dst, 0, a.contentLen())
	return append(dst, `"}`...)
}

// appendFunctionCall renders function_call item c, in progress (arguments "") or completed.
func (a *responsesAnswer) appendFunctionCall(dst []byte, c int, completed bool) []byte {
	dst = append(dst, `{"id":"`...)
	dst = a.appendToolID(dst, "fc_mock_", c)
	if completed {
		dst = append(dst, `","type":"function_call","status":"completed","arguments":`...)
		dst = rawjson.AppendQuoteBytes(dst, a.args)
	} else {
		dst = append(dst, `","type":"function_call","status":"in_progress","arguments":""`...)
	}
	dst = append(dst, `,"call_id":"`...)
	dst = a.appendToolID(dst, "call_mock_", c)
	dst = append(dst, `","name":"`...)
	dst = a.appendToolName(dst, c)
	return append(dst, `"}`...)
}

// begin starts the data of the next event in a.scratch: its type and sequence_number.
func (a *responsesAnswer) begin(typ string) []byte {
	d := append(a.scratch[:0], `{"type":"`...)
	d = append(d, typ...)
	d = append(d, `","sequence_number":`...)
	d = appendInt(d, a.seq)
	a.seq++
	return d
}

// emit writes the event typ whose data begin started and d completes.
func (a *responsesAnswer) emit(w *bufio.Writer, typ string, d []byte) {
	a.scratch = d
	writeNamedEvent(w, typ, d)
}

// writeLifecycle writes response.created, .in_progress, .completed or .failed.
func (a *responsesAnswer) writeLifecycle(w *bufio.Writer, typ string, state int) {
	d := a.begin(typ)
	d = append(d, `,"response":`...)
	d = a.appendResponse(d, state)
	a.emit(w, typ, append(d, '}'))
}

func (a *responsesAnswer) events() int {
	if a.k.EmptyStream {
		return 0
	}
	return a.outputTokens()
}

func (a *responsesAnswer) writeStart(w *bufio.Writer) {
	a.seq = 0
	if a.k.EmptyStream {
		return
	}
	a.writeLifecycle(w, "response.created", respInProgress)
	_ = w.Flush()
	a.writeLifecycle(w, "response.in_progress", respInProgress)
}

// writeItemAdded writes response.output_item.added for the message item (c < 0) or
// function call c.
func (a *responsesAnswer) writeItemAdded(w *bufio.Writer, c int) {
	d := a.begin("response.output_item.added")
	d = append(d, `,"output_index":`...)
	d = appendInt(d, max(c, 0))
	d = append(d, `,"item":`...)
	if c < 0 {
		d = a.appendMessageItem(d, false)
	} else {
		d = a.appendFunctionCall(d, c, false)
	}
	a.emit(w, "response.output_item.added", append(d, '}'))
}

// writeItemDone writes response.output_item.done for the message item (c < 0) or
// function call c.
func (a *responsesAnswer) writeItemDone(w *bufio.Writer, c int) {
	d := a.begin("response.output_item.done")
	d = append(d, `,"output_index":`...)
	d = appendInt(d, max(c, 0))
	d = append(d, `,"item":`...)
	if c < 0 {
		d = a.appendMessageItem(d, true)
	} else {
		d = a.appendFunctionCall(d, c, true)
	}
	a.emit(w, "response.output_item.done", append(d, '}'))
}

// appendPartHead appends the item_id, output_index and content_index of the text part.
func (a *responsesAnswer) appendPartHead(d []byte) []byte {
	d = append(d, `,"item_id":"`...)
	d = a.appendMessageID(d)
	return append(d, `","output_index":0,"content_index":0`...)
}

// openMessage writes the added events of the message item and of its text part.
func (a *responsesAnswer) openMessage(w *bufio.Writer) {
	a.writeItemAdded(w, -1)
	_ = w.Flush()
	d := a.begin("response.content_part.added")
	d = a.appendPartHead(d)
	d = append(d, `,"part":`+respEmptyPart+`}`...)
	a.emit(w, "response.content_part.added", d)
}

// closeMessage writes the done events of the text, its part and the message item.
func (a *responsesAnswer) closeMessage(w *bufio.Writer) {
	d := a.begin("response.output_text.done")
	d = a.appendPartHead(d)
	d = append(d, `,"text":"`...)
	d = appendFiller(d, 0, a.contentLen())
	a.emit(w, "response.output_text.done", append(d, `","logprobs":[]}`...))
	_ = w.Flush()
	d = a.begin("response.content_part.done")
	d = a.appendPartHead(d)
	d = append(d, `,"part":`...)
	d = a.appendTextPart(d)
	a.emit(w, "response.content_part.done", append(d, '}'))
	_ = w.Flush()
	a.writeItemDone(w, -1)
}

// appendCallHead appends the item_id and output_index of function call c.
func (a *responsesAnswer) appendCallHead(d []byte, c int) []byte {
	d = append(d, `,"item_id":"`...)
	d = a.appendToolID(d, "fc_mock_", c)
	d = append(d, `","output_index":`...)
	return appendInt(d, c)
}

// closeCall writes the done events of function call c's arguments and item.
func (a *responsesAnswer) closeCall(w *bufio.Writer, c int) {
	d := a.begin("response.function_call_arguments.done")
	d = a.appendCallHead(d, c)
	d = append(d, `,"arguments":`...)
	d = rawjson.AppendQuoteBytes(d, a.args)
	a.emit(w, "response.function_call_arguments.done", append(d, '}'))
	_ = w.Flush()
	a.writeItemDone(w, c)
}

func (a *responsesAnswer) writeEvent(w *bufio.Writer, i int) {
	if a.toolCalls == 0 {
		if i == 0 {
			a.openMessage(w)
			_ = w.Flush()
		}
		// Fast path - a text delta.
		w.WriteString(respTextDeltaOpen)
		w.Write(appendInt(a.scratch[:0], a.seq))
		a.seq++
		w.Write(a.head)
		writeFiller(w, i*a.k.ChunkSize, a.k.ChunkSize)
		w.WriteString(respTextDeltaClose)
		return
	}
	c, j := a.toolEvent(i)
	if j == 0 {
		// A call's header: close the previous item, add this one.
		if c > 0 {
			a.closeCall(w, c-1)
			_ = w.Flush()
		}
		a.writeItemAdded(w, c)
		return
	}
	d := a.begin("response.function_call_arguments.delta")
	d = a.appendCallHead(d, c)
	d = append(d, `,"delta":`...)
	d = rawjson.AppendQuoteBytes(d, a.argFragment(j-1))
	a.emit(w, "response.function_call_arguments.delta", append(d, '}'))
}

// writeEnd closes the open item and sends response.completed.
func (a *responsesAnswer) writeEnd(w *bufio.Writer) {
	if a.k.EmptyStream {
		return
	}
	if a.toolCalls > 0 {
		a.closeCall(w, a.toolCalls-1)
	} else {
		if a.k.Chunks == 0 {
			a.openMessage(w)
			_ = w.Flush()
		}
		a.closeMessage(w)
	}
	if !a.k.NoDone {
		_ = w.Flush()
		a.writeLifecycle(w, "response.completed", respCompleted)
	}
}

// writeStreamError sends an error event and response.failed, as recorded in
// testdata/openai_responses_error_then_failed.jsonl.
func (a *responsesAnswer) writeStreamError(w *bufio.Writer) {
	d := a.begin("error")
	d = append(d, `,"error":{"type":"server_error","code":"`+respErrorCode+`","message":"`+respErrorMessage+`","param":null}}`...)
	a.emit(w, "error", d)
	_ = w.Flush()
	a.writeLifecycle(w, "response.failed", respFailed)
}
