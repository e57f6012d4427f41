package mock

import (
	"bytes"
	"encoding/base64"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/fasthttp/websocket"
	"github.com/valyala/fasthttp"

	"gw/sse/rawjson"
)

// OpenAI Realtime: GET …/realtime?model=<m> upgraded to a WebSocket session
// that speaks the Realtime protocol's event flow (docs/REALTIME.md of gw):
//
//   - on connect: session.created (session.model is the model + model_suffix);
//   - session.update → session.updated (the caller's session members echoed);
//   - conversation.item.create → conversation.item.created;
//   - input_audio_buffer.append (audio counted) / .commit → .committed;
//   - response.create → response.created, output_item.added, per modality
//     (response.modalities / output_modalities; both when absent) a content
//     part with `chunks` deltas (text: chunk_size filler bytes; audio:
//     base64 of chunk_size PCM bytes plus a transcript delta), the .done
//     events, output_item.done and response.done with usage;
//   - any other event → an `error` event (the session stays open).
//
// Event names follow the protocol the client asked for: the beta names
// (response.text.delta, response.audio.delta, …) with `OpenAI-Beta:
// realtime=v1` or the `openai-beta.realtime-v1` subprotocol, the GA names
// (response.output_text.delta, response.output_audio.delta, …) otherwise.
//
// Usage: input_tokens = max(1, bytes of conversation.item.create events / 4)
// text tokens + decoded audio bytes / 1000 (rounded up) audio tokens since
// the previous response; output_tokens = one per delta (text and audio).
//
// Knobs: chunks, chunk_size, chunk_delay (between deltas), first_token_delay,
// model_suffix; stream_error_after N (responses): the next
// response.create gets an `error` event and the session is closed with 1011;
// fail_after N (responses): the next response.create cuts the TCP connection
// without a close frame. A session needs a credential (Authorization, or the
// `openai-insecure-api-key.` subprotocol): without one the upgrade is a 401.

var openAIRealtimeRoute = route{
	method:      fasthttp.MethodGet,
	match:       func(path []byte) bool { return bytes.HasSuffix(path, strRealtimePath) },
	serve:       (*Server).serveOpenAIRealtime,
	appendError: appendOpenAIError,
}

var (
	strRealtimePath = []byte("/realtime")
	strKeyProto     = []byte("openai-insecure-api-key.")
	strBetaProto    = []byte("openai-beta.realtime-v1")
	strBetaHeader   = []byte("realtime=v1")
)

var rtUpgrader = websocket.FastHTTPUpgrader{
	CheckOrigin:  func(*fasthttp.RequestCtx) bool { return true },
	Subprotocols: []string{"realtime", string(strBetaProto)},
}

// rtSeq numbers sessions, responses and events (ids only).
var rtSeq atomic.Uint64

func (s *Server) serveOpenAIRealtime(ctx *fasthttp.RequestCtx, k *Knobs) {
	model := string(ctx.QueryArgs().Peek("model"))
	if model == "" {
		s.writeError(ctx, appendOpenAIError, fasthttp.StatusBadRequest, "Missing required parameter: 'model'.")
		return
	}
	protos := ctx.Request.Header.Peek("Sec-WebSocket-Protocol")
	if len(ctx.Request.Header.Peek("Authorization")) == 0 && !bytes.Contains(protos, strKeyProto) {
		s.writeError(ctx, appendOpenAIError, fasthttp.StatusUnauthorized, "You didn't provide an API key.")
		return
	}
	beta := bytes.Contains(ctx.Request.Header.Peek("OpenAI-Beta"), strBetaHeader) || bytes.Contains(protos, strBetaProto)
	kk := *k // k is pooled; the session outlives the handler
	err := rtUpgrader.Upgrade(ctx, func(ws *websocket.Conn) {
		defer s.stats.inFlight.Add(-1)
		defer ws.Close()
		s.stats.streams.Add(1)
		m := &rtMock{s: s, ws: ws, k: &kk, model: model + kk.ModelSuffix, beta: beta}
		m.run()
	})
	if err != nil {
		s.writeError(ctx, appendOpenAIError, fasthttp.StatusBadRequest, "mock: "+err.Error())
	}
}

// rtMock is one mock Realtime session.
type rtMock struct {
	s      *Server
	ws     *websocket.Conn
	k      *Knobs
	model  string
	beta   bool
	id     string
	out    []byte
	resps  int // responses answered
	inText int // conversation.item.create bytes since the last response
	inAud  int // decoded input audio bytes since the last response
}

func (m *rtMock) run() {
	m.id = "sess_mock_" + strconv.FormatUint(rtSeq.Add(1), 10)
	m.out = append(m.out[:0], `{"type":"session.created","event_id":`...)
	m.eventID()
	m.out = append(m.out, `,"session":`...)
	m.session(nil)
	m.out = append(m.out, '}')
	if !m.send() {
		return
	}
	for {
		typ, msg, err := m.ws.ReadMessage()
		if err != nil {
			return
		}
		if typ != websocket.TextMessage {
			m.error("invalid_request_error", "binary frames are not events")
			continue
		}
		t, kind, ok := rawjson.Get(msg, "type")
		if !ok || kind != rawjson.String {
			m.error("invalid_request_error", "an event needs a string type")
			continue
		}
		switch string(t) {
		case `"session.update"`:
			sess, kind, _ := rawjson.Get(msg, "session")
			if kind != rawjson.Object {
				sess = nil
			}
			m.out = append(m.out[:0], `{"type":"session.updated","event_id":`...)
			m.eventID()
			m.out = append(m.out, `,"session":`...)
			m.session(sess)
			m.out = append(m.out, '}')
			if !m.send() {
				return
			}
		case `"conversation.item.create"`:
			m.inText += len(msg)
			item, kind, _ := rawjson.Get(msg, "item")
			if kind != rawjson.Object {
				item = []byte("{}")
			}
			m.out = append(m.out[:0], `{"type":"conversation.item.created","event_id":`...)
			m.eventID()
			m.out = append(m.out, `,"previous_item_id":null,"item":`...)
			m.out = append(m.out, item...)
			m.out = append(m.out, '}')
			if !m.send() {
				return
			}
		case `"input_audio_buffer.append"`:
			if a, kind, ok := rawjson.Get(msg, "audio"); ok && kind == rawjson.String {
				m.inAud += max(0, len(a)-2) * 3 / 4
			}
		case `"input_audio_buffer.commit"`:
			m.out = append(m.out[:0], `{"type":"input_audio_buffer.committed","event_id":`...)
			m.eventID()
			m.out = append(m.out, `,"previous_item_id":null,"item_id":"item_audio_`...)
			m.out = strconv.AppendUint(m.out, rtSeq.Add(1), 10)
			m.out = append(m.out, `"}`...)
			if !m.send() {
				return
			}
		case `"response.create"`:
			if !m.respond(msg) {
				return
			}
		case `"response.cancel"`:
		default:
			m.error("invalid_request_error", "unknown event type "+string(t))
		}
	}
}

func (m *rtMock) eventID() {
	m.out = append(m.out, `"event_mock_`...)
	m.out = strconv.AppendUint(m.out, rtSeq.Add(1), 10)
	m.out = append(m.out, '"')
}

// session appends the session object: id, object, model, then the members
// of upd (a session.update's session) or the defaults.
func (m *rtMock) session(upd []byte) {
	m.out = append(m.out, `{"id":`...)
	m.out = rawjson.AppendQuote(m.out, m.id)
	m.out = append(m.out, `,"object":"realtime.session","model":`...)
	m.out = rawjson.AppendQuote(m.out, m.model)
	inner := bytes.TrimSpace(upd)
	if len(inner) > 2 {
		inner = bytes.TrimSpace(inner[1 : len(inner)-1])
	} else {
		inner = nil
	}
	if len(inner) == 0 {
		m.out = append(m.out, `,"modalities":["text","audio"],"voice":"alloy","input_audio_format":"pcm16","output_audio_format":"pcm16"}`...)
		return
	}
	m.out = append(m.out, ',')
	m.out = append(m.out, inner...)
	m.out = append(m.out, '}')
}

func (m *rtMock) send() bool {
	return m.ws.WriteMessage(websocket.TextMessage, m.out) == nil
}

func (m *rtMock) error(typ, msg string) {
	m.out = append(m.out[:0], `{"type":"error","event_id":`...)
	m.eventID()
	m.out = append(m.out, `,"error":{"type":`...)
	m.out = rawjson.AppendQuote(m.out, typ)
	m.out = append(m.out, `,"code":null,"message":`...)
	m.out = rawjson.AppendQuote(m.out, msg)
	m.out = append(m.out, `,"param":null,"event_id":null}}`...)
	m.send()
}

// names returns an event name in the session's protocol: beta or GA.
func (m *rtMock) names(beta, ga string) string {
	if m.beta {
		return beta
	}
	return ga
}

// respond answers one response.create; false ends the session.
func (m *rtMock) respond(msg []byte) bool {
	k := m.k
	if k.StreamError && m.resps >= k.StreamErrorAfter {
		m.error("server_error", "mock: stream error")
		_ = m.ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseInternalServerErr, "mock stream error"), time.Now().Add(time.Second))
		return false
	}
	if k.Fail && m.resps >= k.FailAfter {
		m.s.stats.cuts.Add(1)
		_ = m.ws.NetConn().Close()
		return false
	}
	m.resps++
	text, audio := true, true
	mods, kind, ok := rawjson.GetPath(msg, "response", "modalities")
	if !ok {
		mods, kind, ok = rawjson.GetPath(msg, "response", "output_modalities")
	}
	if ok && kind == rawjson.Array {
		text, audio = bytes.Contains(mods, []byte(`"text"`)), bytes.Contains(mods, []byte(`"audio"`))
	}
	rid := "resp_mock_" + strconv.FormatUint(rtSeq.Add(1), 10)
	iid := "item_mock_" + strconv.FormatUint(rtSeq.Add(1), 10)

	m.out = append(m.out[:0], `{"type":"response.created","event_id":`...)
	m.eventID()
	m.out = append(m.out, `,"response":{"id":"`+rid+`","object":"realtime.response","status":"in_progress","status_details":null,"output":[],"usage":null}}`...)
	if !m.send() {
		return false
	}
	m.out = append(m.out[:0], `{"type":"response.output_item.added","event_id":`...)
	m.eventID()
	m.out = append(m.out, `,"response_id":"`+rid+`","output_index":0,"item":{"id":"`+iid+`","object":"realtime.item","type":"message","status":"in_progress","role":"assistant","content":[]}}`...)
	if !m.send() {
		return false
	}
	if k.FirstTokenDelay > 0 && !m.s.sleep(k.FirstTokenDelay) {
		return false
	}
	outTok := 0
	part := 0
	if text {
		if !m.part(rid, iid, part, `{"type":"text","text":""}`, "response.content_part.added") {
			return false
		}
		for i := 0; i < k.Chunks; i++ {
			if i > 0 && k.ChunkDelay > 0 && !m.s.sleep(k.ChunkDelay) {
				return false
			}
			m.delta(rid, iid, part, m.names("response.text.delta", "response.output_text.delta"), appendFiller(nil, i*k.ChunkSize, k.ChunkSize), false)
			if !m.send() {
				return false
			}
			outTok++
		}
		m.done(rid, iid, part, m.names("response.text.done", "response.output_text.done"), "text", k.Chunks*k.ChunkSize)
		if !m.send() {
			return false
		}
		part++
	}
	if audio {
		if !m.part(rid, iid, part, `{"type":"audio","transcript":""}`, "response.content_part.added") {
			return false
		}
		pcm := make([]byte, k.ChunkSize)
		for i := 0; i < k.Chunks; i++ {
			if i > 0 && k.ChunkDelay > 0 && !m.s.sleep(k.ChunkDelay) {
				return false
			}
			for j := range pcm {
				pcm[j] = byte(i + j)
			}
			m.delta(rid, iid, part, m.names("response.audio.delta", "response.output_audio.delta"), pcm, true)
			if !m.send() {
				return false
			}
			m.delta(rid, iid, part, m.names("response.audio_transcript.delta", "response.output_audio_transcript.delta"), appendFiller(nil, i*k.ChunkSize, k.ChunkSize), false)
			if !m.send() {
				return false
			}
			outTok++
		}
		m.out = append(m.out[:0], `{"type":"`+m.names("response.audio.done", "response.output_audio.done")+`","event_id":`...)
		m.eventID()
		m.out = append(m.out, `,"response_id":"`+rid+`","item_id":"`+iid+`","output_index":0,"content_index":`...)
		m.out = appendInt(m.out, part)
		m.out = append(m.out, '}')
		if !m.send() {
			return false
		}
		m.done(rid, iid, part, m.names("response.audio_transcript.done", "response.output_audio_transcript.done"), "transcript", k.Chunks*k.ChunkSize)
		if !m.send() {
			return false
		}
	}
	m.out = append(m.out[:0], `{"type":"response.output_item.done","event_id":`...)
	m.eventID()
	m.out = append(m.out, `,"response_id":"`+rid+`","output_index":0,"item":{"id":"`+iid+`","object":"realtime.item","type":"message","status":"completed","role":"assistant","content":[]}}`...)
	if !m.send() {
		return false
	}

	inTextTok := max(1, m.inText/4)
	inAudTok := (m.inAud + 999) / 1000
	m.inText, m.inAud = 0, 0
	textTok, audTok := 0, 0
	if text {
		textTok = k.Chunks
	}
	if audio {
		audTok = k.Chunks
	}
	in := inTextTok + inAudTok
	m.out = append(m.out[:0], `{"type":"response.done","event_id":`...)
	m.eventID()
	m.out = append(m.out, `,"response":{"id":"`+rid+`","object":"realtime.response","status":"completed","status_details":null,"output":[{"id":"`+iid+`","object":"realtime.item","type":"message","status":"completed","role":"assistant","content":[]}],"usage":{"total_tokens":`...)
	m.out = appendInt(m.out, in+outTok)
	m.out = append(m.out, `,"input_tokens":`...)
	m.out = appendInt(m.out, in)
	m.out = append(m.out, `,"output_tokens":`...)
	m.out = appendInt(m.out, outTok)
	m.out = append(m.out, `,"input_token_details":{"cached_tokens":0,"text_tokens":`...)
	m.out = appendInt(m.out, inTextTok)
	m.out = append(m.out, `,"audio_tokens":`...)
	m.out = appendInt(m.out, inAudTok)
	m.out = append(m.out, `},"output_token_details":{"text_tokens":`...)
	m.out = appendInt(m.out, textTok)
	m.out = append(m.out, `,"audio_tokens":`...)
	m.out = appendInt(m.out, audTok)
	m.out = append(m.out, `}}}}`...)
	return m.send()
}

func (m *rtMock) part(rid, iid string, idx int, part, name string) bool {
	m.out = append(m.out[:0], `{"type":"`+name+`","event_id":`...)
	m.eventID()
	m.out = append(m.out, `,"response_id":"`+rid+`","item_id":"`+iid+`","output_index":0,"content_index":`...)
	m.out = appendInt(m.out, idx)
	m.out = append(m.out, `,"part":`+part+`}`...)
	return m.send()
}

// delta fills m.out with one delta event; b64 sends data base64-encoded (audio).
func (m *rtMock) delta(rid, iid string, idx int, name string, data []byte, b64 bool) {
	m.out = append(m.out[:0], `{"type":"`+name+`","event_id":`...)
	m.eventID()
	m.out = append(m.out, `,"response_id":"`+rid+`","item_id":"`+iid+`","output_index":0,"content_index":`...)
	m.out = appendInt(m.out, idx)
	m.out = append(m.out, `,"delta":`...)
	if b64 {
		m.out = append(m.out, '"')
		m.out = base64.StdEncoding.AppendEncode(m.out, data)
		m.out = append(m.out, '"')
	} else {
		m.out = rawjson.AppendQuote(m.out, string(data))
	}
	m.out = append(m.out, '}')
}

// done fills m.out with a .done event carrying the whole field (n filler bytes).
func (m *rtMock) done(rid, iid string, idx int, name, field string, n int) {
	m.out = append(m.out[:0], `{"type":"`+name+`","event_id":`...)
	m.eventID()
	m.out = append(m.out, `,"response_id":"`+rid+`","item_id":"`+iid+`","output_index":0,"content_index":`...)
	m.out = appendInt(m.out, idx)
	m.out = append(m.out, `,"`+field+`":`...)
	m.out = rawjson.AppendQuote(m.out, string(appendFiller(nil, 0, n)))
	m.out = append(m.out, '}')
}

// Filler returns n bytes of the mock's content filler from offset off: the
// text of a response whose chunks are chunk_size bytes is Filler(0,
// chunks×chunk_size).
func Filler(off, n int) []byte { return appendFiller(nil, off, n) }
