package mock

import (
	"bufio"
	"bytes"
	"strconv"
	"time"

	"github.com/valyala/fasthttp"

	"gw/sse/rawjson"
)

// What every wire format's answer shares: the echoed model, the prompt-token estimate,
// the filler content and the tool calls with their arguments. Each format embeds
// answerBase in its pooled answer and renders these in its own words.

const (
	fillerText = "Hello from the gw mock provider. This reply is deterministic filler made of plain " +
		"ASCII words, so tests can check every byte that streams through the gateway. "
	argsOpen  = `{"query":"`
	argsClose = `"}`

	maxToolNames = 16
	msgTooLarge  = "mock: chunks*chunk_size (times tool_calls) exceeds 64 MiB"
)

// answerBase is the format-neutral part of one answer. It outlives the request body: the
// model and the tool names are copied into it.
type answerBase struct {
	k            Knobs
	id           uint64
	created      int64
	toolCalls    int // 0: a text answer
	promptTokens int
	argLen       int // bytes of each tool call's arguments
	frags        int // argument fragments per tool call

	model    []byte // as echoed: requested model + escaped model_suffix
	names    []byte // tool names, concatenated
	nameEnds [maxToolNames]int
	nNames   int
	args     []byte // arguments of every tool call (raw JSON text)
	scratch  []byte
}

// prepareBase fills b for one request: model is the requested model (escapes kept),
// toolNames the names of the declared tools. It returns the message of a 400 answer, or "".
func (b *answerBase) prepareBase(s *Server, k *Knobs, bodyLen int, model []byte, hasTools bool, toolNames [][]byte) string {
	b.k = *k
	b.toolCalls = 0
	if k.ToolCalls > 0 && (k.forceToolCalls || hasTools) {
		b.toolCalls = k.ToolCalls
	}
	size := k.Chunks * k.ChunkSize
	if b.toolCalls > 0 {
		size = max(size, len(argsOpen)+len(argsClose)) * b.toolCalls
	}
	if size > maxContentSize {
		return msgTooLarge
	}

	b.id = s.seq.Add(1)
	b.created = time.Now().Unix()
	b.promptTokens = promptTokens(bodyLen)
	b.model = appendEscaped(append(b.model[:0], model...), k.ModelSuffix)
	b.names, b.nNames = b.names[:0], 0
	for _, name := range toolNames {
		b.names = append(b.names, name...)
		b.nameEnds[b.nNames] = len(b.names)
		b.nNames++
	}
	if b.toolCalls > 0 {
		b.argLen = max(k.Chunks*k.ChunkSize, len(argsOpen)+len(argsClose))
		b.frags = (b.argLen + k.ChunkSize - 1) / k.ChunkSize
		b.args = append(b.args[:0], argsOpen...)
		b.args = appendFiller(b.args, 0, b.argLen-len(argsOpen)-len(argsClose))
		b.args = append(b.args, argsClose...)
	}
	return ""
}

// trim drops buffers that one huge answer grew, before the answer goes back to its pool.
func (b *answerBase) trim() {
	if cap(b.args) > 1<<20 {
		b.args = nil
	}
	if cap(b.scratch) > 1<<20 {
		b.scratch = nil
	}
}

// promptTokens is the deterministic stand-in for tokenization: about four bytes per token.
func promptTokens(bodyLen int) int { return max(1, bodyLen/4) }

// outputTokens is the number of content events the answer has: content chunks, or
// tool-call headers plus argument fragments.
func (b *answerBase) outputTokens() int {
	if b.toolCalls > 0 {
		return b.toolCalls * (1 + b.frags)
	}
	return b.k.Chunks
}

// contentLen is the length of a text answer's content.
func (b *answerBase) contentLen() int { return b.k.Chunks * b.k.ChunkSize }

// toolEvent splits content event i of a tool-call answer into the call c and its event j:
// 0 is the call's header, j > 0 its argument fragment j-1.
func (b *answerBase) toolEvent(i int) (c, j int) {
	return i / (1 + b.frags), i % (1 + b.frags)
}

// argFragment returns argument fragment f (0-based) of every tool call: chunk_size bytes
// of the raw arguments.
func (b *answerBase) argFragment(f int) []byte {
	from := f * b.k.ChunkSize
	return b.args[from:min(from+b.k.ChunkSize, len(b.args))]
}

// appendToolID appends prefix + "<answer id>_<c>", the id of tool call c.
func (b *answerBase) appendToolID(dst []byte, prefix string, c int) []byte {
	dst = append(dst, prefix...)
	dst = strconv.AppendUint(dst, b.id, 10)
	dst = append(dst, '_')
	return appendInt(dst, c)
}

// appendToolName names tool call c after the request's tools, round-robin, or mock_tool_<c>
// when the request declared none.
func (b *answerBase) appendToolName(dst []byte, c int) []byte {
	if b.nNames == 0 {
		return appendInt(append(dst, "mock_tool_"...), c)
	}
	i := c % b.nNames
	start := 0
	if i > 0 {
		start = b.nameEnds[i-1]
	}
	return append(dst, b.names[start:b.nameEnds[i]]...)
}

// readNamedTools reads a tools array whose elements name themselves with a top-level
// "name" (Anthropic Messages, OpenAI Responses). It reports whether the array has an
// element and keeps the first non-empty string names, escapes kept. The name is matched
// exactly (the last of repeated ones), as the request's other members (memberIndex): the
// providers' own parsers read exact names, where rawjson.Get reads them as Go does.
func readNamedTools(tools []byte, names *[maxToolNames][]byte) (has bool, n int) {
	_ = rawjson.ForEachElem(tools, func(_ int, tool []byte, _ rawjson.Kind) bool {
		has = true
		var name []byte
		var kind rawjson.Kind
		_ = rawjson.ForEachKey(tool, func(k, v []byte, vk rawjson.Kind) bool {
			if memberIndex(k, toolNameMember) == 0 {
				name, kind = v, vk
			}
			return true
		})
		if kind == rawjson.String && len(name) > 2 {
			names[n] = name[1 : len(name)-1]
			n++
		}
		return n < maxToolNames
	})
	return has, n
}

var toolNameMember = []string{"name"}

// countElems returns the number of elements of the array val, or false if it is not one.
func countElems(val []byte) (int, bool) {
	n := 0
	if rawjson.ForEachElem(val, func(int, []byte, rawjson.Kind) bool { n++; return true }) != nil {
		return 0, false
	}
	return n, true
}

// memberIndex tells which of names the raw quoted key names, or -1. Keys compare
// decoded, as in rawjson; a key spelled without a backslash is compared as it is.
func memberIndex(key []byte, names []string) int {
	if bytes.IndexByte(key, '\\') < 0 {
		k := key[1 : len(key)-1]
		for i, name := range names {
			if string(k) == name {
				return i
			}
		}
		return -1
	}
	for i, name := range names {
		if rawjson.StringEquals(key, name) {
			return i
		}
	}
	return -1
}

// writeNamedEvent writes one named SSE event: "event: <name>\ndata: <data>\n\n". The names of
// the Anthropic and Responses events equal the type in their data.
func writeNamedEvent(w *bufio.Writer, name string, data []byte) {
	w.WriteString("event: ")
	w.WriteString(name)
	w.WriteString("\ndata: ")
	w.Write(data)
	w.WriteString("\n\n")
}

// appendFiller appends n bytes of the endless repetition of fillerText, from offset off.
// Chunk i of a stream is appendFiller(off=i*chunk_size, n=chunk_size), so the buffered
// content equals the concatenated streamed content.
func appendFiller(dst []byte, off, n int) []byte {
	for n > 0 {
		o := off % len(fillerText)
		m := min(n, len(fillerText)-o)
		dst = append(dst, fillerText[o:o+m]...)
		off += m
		n -= m
	}
	return dst
}

func writeFiller(w *bufio.Writer, off, n int) {
	for n > 0 {
		o := off % len(fillerText)
		m := min(n, len(fillerText)-o)
		w.WriteString(fillerText[o : o+m])
		off += m
		n -= m
	}
}

// appendEscaped appends s escaped as the inside of a JSON string, as rawjson.AppendQuote
// escapes it but without the quotes: the model suffix joins the requested model in one string.
func appendEscaped(dst []byte, s string) []byte {
	n := len(dst)
	dst = rawjson.AppendQuote(dst, s)
	copy(dst[n:], dst[n+1:len(dst)-1])
	return dst[:len(dst)-2]
}

func appendInt(dst []byte, n int) []byte {
	return strconv.AppendInt(dst, int64(n), 10)
}

// requestBody returns the request body, decompressed when it has a Content-Encoding.
func requestBody(ctx *fasthttp.RequestCtx) ([]byte, error) {
	if len(ctx.Request.Header.ContentEncoding()) == 0 {
		return ctx.PostBody(), nil
	}
	return ctx.Request.BodyUncompressedWithLimit(maxContentSize)
}

// formatAnswer is one wire format's pooled answer, served by serveFormat.
type formatAnswer interface {
	streamBody
	// load parses the request body and prepares the answer; it returns the
	// message of a 400 answer, or "".
	load(s *Server, k *Knobs, body []byte) string
	// streaming reports whether the caller asked for a stream.
	streaming() bool
	// appendBuffered renders the buffered answer.
	appendBuffered(dst []byte) []byte
	// requestID is the answer's number, for the request-id header.
	requestID() uint64
}

// serveFormat is the handler shared by every wire format: decode, parse,
// answer (buffered or streamed), honouring the fault knobs.
func (s *Server) serveFormat(ctx *fasthttp.RequestCtx, k *Knobs, a formatAnswer, errFormat errorFormat, setID func(*fasthttp.RequestCtx, uint64)) {
	body, err := requestBody(ctx)
	if err != nil {
		a.release()
		s.writeError(ctx, errFormat, fasthttp.StatusBadRequest, "mock: cannot decode the request body: "+err.Error())
		return
	}
	if msg := a.load(s, k, body); msg != "" {
		a.release()
		s.writeError(ctx, errFormat, fasthttp.StatusBadRequest, msg)
		return
	}
	setID(ctx, a.requestID())
	if a.streaming() {
		s.stream(ctx, k, a)
		return
	}
	if k.Fail {
		a.release()
		s.hangUp(ctx)
		return
	}
	bp := acquireBuf()
	*bp = a.appendBuffered((*bp)[:0])
	ctx.SetContentTypeBytes(strJSON)
	ctx.SetBody(*bp)
	releaseBuf(bp)
	a.release()
}
