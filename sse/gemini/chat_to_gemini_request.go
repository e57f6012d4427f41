package gemini

import (
	"bytes"
	"strconv"
	"sync"

	"gw/sse/rawjson"
)

// ChatRequestToGemini appends to dst the generateContent body for the chat
// completions request body (see the package comment for the mapping) and
// returns it. model and stream are not part of a Gemini body (they are in
// the URL). dst must not overlap body. On error dst is returned unchanged
// and the error wraps ErrInvalidRequest.
func ChatRequestToGemini(dst, body []byte) ([]byte, error) {
	w := reqPool.Get().(*reqWriter)
	defer w.release()
	out, err := w.convert(dst, body)
	if err != nil {
		return dst, err
	}
	return out, nil
}

type reqError struct{ field, msg string }

func (e *reqError) Error() string {
	return ErrInvalidRequest.Error() + ": `" + e.field + "`: " + e.msg
}
func (e *reqError) Unwrap() error { return ErrInvalidRequest }

func reqErr(field, msg string) error { return &reqError{field: field, msg: msg} }

// reqWriter holds the buffers of one request conversion.
type reqWriter struct {
	out   []byte
	sys   []byte // systemInstruction parts
	gen   []byte // generationConfig members
	tmp   []byte
	tmp2  []byte
	calls []callRef // tool_call id → function name, from assistant turns
	role  string    // role of the open content ("" none)
	npart int       // parts in the open content
	nsys  int
}

// callRef is one earlier tool call: its id (decoded) and name (raw literal).
type callRef struct {
	id   []byte
	name []byte
}

var reqPool = sync.Pool{New: func() any { return new(reqWriter) }}

func (w *reqWriter) release() {
	w.out, w.sys, w.gen, w.tmp, w.tmp2 = keep(w.out), keep(w.sys), keep(w.gen), keep(w.tmp), keep(w.tmp2)
	for i := range w.calls {
		w.calls[i] = callRef{}
	}
	w.calls = w.calls[:0]
	reqPool.Put(w)
}

const (
	rqMessages = iota
	rqTools
	rqToolChoice
	rqTemperature
	rqTopP
	rqTopK
	rqMaxTokens
	rqMaxCompletion
	rqStop
	rqSeed
	rqPresence
	rqFrequency
	rqResponseFormat
	rqEffort
	rqSafety
	rqSafetyCamel
	rqN
)

var reqKeys = []string{"messages", "tools", "tool_choice", "temperature", "top_p", "top_k",
	"max_tokens", "max_completion_tokens", "stop", "seed", "presence_penalty", "frequency_penalty",
	"response_format", "reasoning_effort", "safety_settings", "safetySettings"}

var msgKeys = []string{"role", "content", "tool_calls", "tool_call_id"}

func (w *reqWriter) convert(dst, body []byte) ([]byte, error) {
	var v [rqN][]byte
	if rawjson.ScanTop(body, reqKeys, v[:]) != nil {
		return dst, reqErr("body", "not a JSON object")
	}
	if rawjson.KindOf(v[rqMessages]) != rawjson.Array {
		return dst, reqErr("messages", "must be an array")
	}
	w.out, w.sys, w.gen = append(w.out[:0], `{"contents":[`...), w.sys[:0], w.gen[:0]
	w.role, w.npart, w.nsys = "", 0, 0
	w.calls = w.calls[:0]

	var c rawjson.Cursor
	c.Reset(v[rqMessages])
	c.Begin()
	for c.More() {
		m, _, _ := c.Value()
		var mv [4][]byte
		if rawjson.ScanTop(m, msgKeys, mv[:]) != nil {
			return dst, reqErr("messages[]", "must be an object")
		}
		var err error
		switch string(word(mv[0], &w.tmp)) {
		case "system", "developer":
			err = w.system(mv[1])
		case "user":
			err = w.content("user", mv[1])
		case "assistant":
			err = w.assistant(mv[1], mv[2])
		case "tool":
			err = w.toolResult(mv[1], mv[3])
		default:
			err = reqErr("messages[].role", "unknown role")
		}
		if err != nil {
			return dst, err
		}
	}
	if c.Err() != nil {
		return dst, reqErr("messages", "malformed")
	}
	w.closeContent()
	w.out = append(w.out, ']')
	if w.nsys > 0 {
		w.out = append(w.out, `,"systemInstruction":{"parts":[`...)
		w.out = append(w.out, w.sys...)
		w.out = append(w.out, "]}"...)
	}
	if err := w.tools(v[rqTools], v[rqToolChoice]); err != nil {
		return dst, err
	}
	if err := w.generation(&v); err != nil {
		return dst, err
	}
	if len(w.gen) > 0 {
		w.out = append(w.out, `,"generationConfig":{`...)
		w.out = append(w.out, w.gen...)
		w.out = append(w.out, '}')
	}
	// Gemini's safetySettings have no chat field: a caller's
	// safety_settings (or safetySettings) array is sent as written.
	safety := v[rqSafety]
	if safety == nil || rawjson.KindOf(safety) == rawjson.Null {
		safety = v[rqSafetyCamel]
	}
	if safety != nil && rawjson.KindOf(safety) != rawjson.Null {
		if rawjson.KindOf(safety) != rawjson.Array {
			return dst, reqErr("safety_settings", "must be an array of {category, threshold}")
		}
		w.out = append(w.out, `,"safetySettings":`...)
		w.out = append(w.out, safety...)
	}
	w.out = append(w.out, '}')
	return append(dst, w.out...), nil
}

// openPart starts a part of a content with role, merging adjacent turns of
// the same role; the caller appends the part object.
func (w *reqWriter) openPart(role string) {
	if w.role != role {
		w.closeContent()
		if w.out[len(w.out)-1] != '[' {
			w.out = append(w.out, ',')
		}
		w.out = append(w.out, `{"role":"`...)
		w.out = append(w.out, role...)
		w.out = append(w.out, `","parts":[`...)
		w.role, w.npart = role, 0
	}
	if w.npart > 0 {
		w.out = append(w.out, ',')
	}
	w.npart++
}

func (w *reqWriter) closeContent() {
	if w.role != "" {
		w.out = append(w.out, "]}"...)
		w.role = ""
	}
}

// textPart appends {"text": raw} (raw a string literal) unless it is empty.
func appendTextPart(dst, raw []byte) []byte {
	dst = append(dst, `{"text":`...)
	return append(dst, raw...)
}

// system adds a system or developer message's text to systemInstruction.
func (w *reqWriter) system(content []byte) error {
	switch rawjson.KindOf(content) {
	case rawjson.String:
		w.sysText(content)
	case rawjson.Array:
		var c rawjson.Cursor
		c.Reset(content)
		c.Begin()
		for c.More() {
			p, _, _ := c.Value()
			if t, _, ok := rawjson.Get(p, "text"); ok && rawjson.KindOf(t) == rawjson.String {
				w.sysText(t)
			}
		}
		if c.Err() != nil {
			return reqErr("messages[].content", "malformed")
		}
	case rawjson.Null:
	default:
		return reqErr("messages[].content", "must be a string or an array")
	}
	return nil
}

func (w *reqWriter) sysText(t []byte) {
	if !nonEmptyStr(t) {
		return
	}
	if w.nsys > 0 {
		w.sys = append(w.sys, ',')
	}
	w.nsys++
	w.sys = appendTextPart(w.sys, t)
	w.sys = append(w.sys, '}')
}

var contentPartKeys = []string{"type", "text", "image_url", "input_audio", "file"}

// content adds a user (or assistant) message's content parts.
func (w *reqWriter) content(role string, content []byte) error {
	switch rawjson.KindOf(content) {
	case rawjson.String:
		if nonEmptyStr(content) {
			w.openPart(role)
			w.out = appendTextPart(w.out, content)
			w.out = append(w.out, '}')
		}
	case rawjson.Array:
		var c rawjson.Cursor
		c.Reset(content)
		c.Begin()
		for c.More() {
			p, _, _ := c.Value()
			if err := w.contentPart(role, p); err != nil {
				return err
			}
		}
		if c.Err() != nil {
			return reqErr("messages[].content", "malformed")
		}
	case rawjson.Null, rawjson.Invalid:
	default:
		return reqErr("messages[].content", "must be a string or an array")
	}
	return nil
}

func (w *reqWriter) contentPart(role string, p []byte) error {
	var v [5][]byte
	if rawjson.ScanTop(p, contentPartKeys, v[:]) != nil {
		return reqErr("messages[].content[]", "must be an object")
	}
	switch string(word(v[0], &w.tmp)) {
	case "text":
		if nonEmptyStr(v[1]) {
			w.openPart(role)
			w.out = appendTextPart(w.out, v[1])
			w.out = append(w.out, '}')
		}
	case "image_url":
		u := v[2]
		if rawjson.KindOf(u) == rawjson.Object {
			u, _, _ = rawjson.Get(u, "url")
		}
		if rawjson.KindOf(u) != rawjson.String {
			return reqErr("messages[].content[].image_url.url", "must be a string")
		}
		return w.media(role, u, "image/jpeg")
	case "input_audio":
		d, _, _ := rawjson.Get(v[3], "data")
		f, _, _ := rawjson.Get(v[3], "format")
		if rawjson.KindOf(d) != rawjson.String {
			return reqErr("messages[].content[].input_audio.data", "must be a string")
		}
		w.openPart(role)
		w.out = append(w.out, `{"inlineData":{"mimeType":"audio/`...)
		if fw := word(f, &w.tmp); len(fw) > 0 {
			w.out = appendUnquotedInLiteral(w.out, fw)
		} else {
			w.out = append(w.out, "wav"...)
		}
		w.out = append(w.out, `","data":`...)
		w.out = append(w.out, d...)
		w.out = append(w.out, "}}"...)
	case "file":
		d, _, _ := rawjson.Get(v[4], "file_data")
		if rawjson.KindOf(d) != rawjson.String {
			return reqErr("messages[].content[].file.file_data", "must be a string (file ids cannot be sent to Gemini)")
		}
		return w.media(role, d, "application/pdf")
	default:
		return reqErr("messages[].content[].type", "unsupported content part for Gemini")
	}
	return nil
}

// appendUnquotedInLiteral appends s (decoded text) escaped for use inside
// an already open JSON string literal.
func appendUnquotedInLiteral(dst, s []byte) []byte {
	n := len(dst)
	dst = rawjson.AppendQuoteBytes(dst, s)
	return append(dst[:n], dst[n+1:len(dst)-1]...)
}

// media adds an inlineData part for a data URL, else a fileData part.
func (w *reqWriter) media(role string, rawURL []byte, fallbackMime string) error {
	u, err := rawjson.AppendUnquote(w.tmp2[:0], rawURL)
	if err != nil {
		return reqErr("messages[].content[]", "malformed URL")
	}
	w.tmp2 = u
	w.openPart(role)
	if bytes.HasPrefix(u, []byte("data:")) {
		i := bytes.Index(u, []byte(";base64,"))
		if i < 0 {
			return reqErr("messages[].content[]", "data URL must be base64")
		}
		w.out = append(w.out, `{"inlineData":{"mimeType":`...)
		w.out = rawjson.AppendQuoteBytes(w.out, u[5:i])
		w.out = append(w.out, `,"data":`...)
		w.out = rawjson.AppendQuoteBytes(w.out, u[i+8:])
		w.out = append(w.out, "}}"...)
		return nil
	}
	w.out = append(w.out, `{"fileData":{"mimeType":"`...)
	w.out = append(w.out, mimeOf(u, fallbackMime)...)
	w.out = append(w.out, `","fileUri":`...)
	w.out = rawjson.AppendQuoteBytes(w.out, u)
	w.out = append(w.out, "}}"...)
	return nil
}

// mimeOf guesses a MIME type from a URL's extension.
func mimeOf(u []byte, fallback string) string {
	if i := bytes.IndexAny(u, "?#"); i >= 0 {
		u = u[:i]
	}
	dot := bytes.LastIndexByte(u, '.')
	if dot < 0 || bytes.IndexByte(u[dot:], '/') >= 0 {
		return fallback
	}
	switch string(bytes.ToLower(u[dot+1:])) {
	case "png":
		return "image/png"
	case "jpg", "jpeg":
		return "image/jpeg"
	case "webp":
		return "image/webp"
	case "gif":
		return "image/gif"
	case "heic":
		return "image/heic"
	case "pdf":
		return "application/pdf"
	case "mp3":
		return "audio/mp3"
	case "wav":
		return "audio/wav"
	case "mp4":
		return "video/mp4"
	}
	return fallback
}

var toolCallKeys = []string{"id", "function"}
var fnKeys = []string{"name", "arguments"}

// assistant adds an assistant message: its text, then its tool calls.
func (w *reqWriter) assistant(content, calls []byte) error {
	if err := w.content("model", content); err != nil {
		return err
	}
	if rawjson.KindOf(calls) != rawjson.Array {
		return nil
	}
	var c rawjson.Cursor
	c.Reset(calls)
	c.Begin()
	for c.More() {
		tc, _, _ := c.Value()
		var tv [2][]byte
		var fv [2][]byte
		if rawjson.ScanTop(tc, toolCallKeys, tv[:]) != nil || rawjson.ScanTop(tv[1], fnKeys, fv[:]) != nil ||
			rawjson.KindOf(fv[0]) != rawjson.String {
			return reqErr("messages[].tool_calls[]", "must have a function with a string name")
		}
		args := []byte("{}")
		if rawjson.KindOf(fv[1]) == rawjson.String {
			a, err := rawjson.AppendUnquote(w.tmp[:0], fv[1])
			if err != nil {
				return reqErr("messages[].tool_calls[].function.arguments", "malformed string")
			}
			w.tmp = a
			if t := trimWS(a); len(t) > 0 {
				if rawjson.KindOf(t) != rawjson.Object || !rawjson.Valid(t) {
					return reqErr("messages[].tool_calls[].function.arguments", "must be a JSON object")
				}
				args = t
			}
		}
		id, err := rawjson.AppendUnquote(nil, tv[0])
		if err != nil {
			id = nil
		}
		w.calls = append(w.calls, callRef{id: id, name: fv[0]})
		w.openPart("model")
		w.out = append(w.out, `{"functionCall":{"name":`...)
		w.out = append(w.out, fv[0]...)
		w.out = append(w.out, `,"args":`...)
		w.out = append(w.out, args...)
		w.out = append(w.out, '}')
		if i := bytes.Index(id, []byte(ThoughtMarker)); i >= 0 {
			w.out = append(w.out, `,"thoughtSignature":`...)
			w.out = rawjson.AppendQuoteBytes(w.out, id[i+len(ThoughtMarker):])
		}
		w.out = append(w.out, '}')
	}
	if c.Err() != nil {
		return reqErr("messages[].tool_calls", "malformed")
	}
	return nil
}

// toolResult adds a tool message as a functionResponse part of a user turn.
func (w *reqWriter) toolResult(content, callID []byte) error {
	id, err := rawjson.AppendUnquote(w.tmp2[:0], callID)
	if err != nil || len(id) == 0 {
		return reqErr("messages[].tool_call_id", "must be a string")
	}
	w.tmp2 = id
	var name []byte
	for i := len(w.calls) - 1; i >= 0; i-- {
		if bytes.Equal(w.calls[i].id, id) {
			name = w.calls[i].name
			break
		}
	}
	if name == nil {
		return reqErr("messages[].tool_call_id", "answers no earlier tool call (Gemini needs the function name)")
	}
	// The text of the result: a string, or the text parts joined.
	text := w.tmp[:0]
	switch rawjson.KindOf(content) {
	case rawjson.String:
		text, _ = rawjson.AppendUnquote(text, content)
	case rawjson.Array:
		var c rawjson.Cursor
		c.Reset(content)
		c.Begin()
		for c.More() {
			p, _, _ := c.Value()
			if t, _, ok := rawjson.Get(p, "text"); ok && rawjson.KindOf(t) == rawjson.String {
				text, _ = rawjson.AppendUnquote(text, t)
			}
		}
	}
	w.tmp = text
	w.openPart("user")
	w.out = append(w.out, `{"functionResponse":{"name":`...)
	w.out = append(w.out, name...)
	w.out = append(w.out, `,"response":`...)
	if t := trimWS(text); rawjson.KindOf(t) == rawjson.Object && rawjson.Valid(t) {
		w.out = append(w.out, t...)
	} else {
		w.out = append(w.out, `{"content":`...)
		w.out = rawjson.AppendQuoteBytes(w.out, text)
		w.out = append(w.out, '}')
	}
	w.out = append(w.out, "}}"...)
	return nil
}

var toolKeys = []string{"type", "function"}
var fnDeclKeys = []string{"name", "description", "parameters"}

// tools writes tools and toolConfig.
func (w *reqWriter) tools(tools, choice []byte) error {
	n := 0
	if rawjson.KindOf(tools) == rawjson.Array {
		var c rawjson.Cursor
		c.Reset(tools)
		c.Begin()
		for c.More() {
			t, _, _ := c.Value()
			var tv [2][]byte
			var fv [3][]byte
			if rawjson.ScanTop(t, toolKeys, tv[:]) != nil {
				return reqErr("tools[]", "must be an object")
			}
			if !rawjson.StringEquals(tv[0], "function") {
				return reqErr("tools[].type", "only function tools can be sent to Gemini")
			}
			if rawjson.ScanTop(tv[1], fnDeclKeys, fv[:]) != nil || rawjson.KindOf(fv[0]) != rawjson.String {
				return reqErr("tools[].function.name", "must be a string")
			}
			if n == 0 {
				w.out = append(w.out, `,"tools":[{"functionDeclarations":[`...)
			} else {
				w.out = append(w.out, ',')
			}
			n++
			w.out = append(w.out, `{"name":`...)
			w.out = append(w.out, fv[0]...)
			if rawjson.KindOf(fv[1]) == rawjson.String {
				w.out = append(w.out, `,"description":`...)
				w.out = append(w.out, fv[1]...)
			}
			if rawjson.KindOf(fv[2]) == rawjson.Object {
				w.out = append(w.out, `,"parametersJsonSchema":`...)
				w.out = append(w.out, fv[2]...)
			}
			w.out = append(w.out, '}')
		}
		if c.Err() != nil {
			return reqErr("tools", "malformed")
		}
		if n > 0 {
			w.out = append(w.out, "]}]"...)
		}
	}
	switch rawjson.KindOf(choice) {
	case rawjson.String:
		mode := ""
		switch string(word(choice, &w.tmp)) {
		case "auto":
			mode = "AUTO"
		case "none":
			mode = "NONE"
		case "required":
			mode = "ANY"
		default:
			return reqErr("tool_choice", "must be auto, none, required or a function")
		}
		w.out = append(w.out, `,"toolConfig":{"functionCallingConfig":{"mode":"`...)
		w.out = append(w.out, mode...)
		w.out = append(w.out, `"}}`...)
	case rawjson.Object:
		name, _, ok := rawjson.GetPath(choice, "function", "name")
		if !ok || rawjson.KindOf(name) != rawjson.String {
			return reqErr("tool_choice.function.name", "must be a string")
		}
		w.out = append(w.out, `,"toolConfig":{"functionCallingConfig":{"mode":"ANY","allowedFunctionNames":[`...)
		w.out = append(w.out, name...)
		w.out = append(w.out, "]}}"...)
	}
	return nil
}

// genMember appends one generationConfig member (key is `"name":`).
func (w *reqWriter) genMember(key string, raw []byte) {
	if len(w.gen) > 0 {
		w.gen = append(w.gen, ',')
	}
	w.gen = append(w.gen, key...)
	w.gen = append(w.gen, raw...)
}

// Thinking budgets per reasoning_effort.
const (
	BudgetMinimal = 512
	BudgetLow     = 1024
	BudgetMedium  = 8192
	BudgetHigh    = 24576
	BudgetMax     = 32768
)

// generation fills generationConfig.
func (w *reqWriter) generation(v *[rqN][]byte) error {
	num := func(i int, key string) error {
		if x := v[i]; x != nil && rawjson.KindOf(x) != rawjson.Null {
			if rawjson.KindOf(x) != rawjson.Number {
				return reqErr(reqKeys[i], "must be a number")
			}
			w.genMember(key, x)
		}
		return nil
	}
	if err := num(rqTemperature, `"temperature":`); err != nil {
		return err
	}
	if err := num(rqTopP, `"topP":`); err != nil {
		return err
	}
	if err := num(rqTopK, `"topK":`); err != nil {
		return err
	}
	if rawjson.KindOf(v[rqMaxCompletion]) == rawjson.Number {
		w.genMember(`"maxOutputTokens":`, v[rqMaxCompletion])
	} else if err := num(rqMaxTokens, `"maxOutputTokens":`); err != nil {
		return err
	}
	switch rawjson.KindOf(v[rqStop]) {
	case rawjson.String:
		w.genMember(`"stopSequences":[`, v[rqStop])
		w.gen = append(w.gen, ']')
	case rawjson.Array:
		w.genMember(`"stopSequences":`, v[rqStop])
	}
	if err := num(rqSeed, `"seed":`); err != nil {
		return err
	}
	if err := num(rqPresence, `"presencePenalty":`); err != nil {
		return err
	}
	if err := num(rqFrequency, `"frequencyPenalty":`); err != nil {
		return err
	}
	if rf := v[rqResponseFormat]; rawjson.KindOf(rf) == rawjson.Object {
		t, _, _ := rawjson.Get(rf, "type")
		switch string(word(t, &w.tmp)) {
		case "json_object":
			w.genMember(`"responseMimeType":`, []byte(`"application/json"`))
		case "json_schema":
			w.genMember(`"responseMimeType":`, []byte(`"application/json"`))
			if s, _, ok := rawjson.GetPath(rf, "json_schema", "schema"); ok && rawjson.KindOf(s) == rawjson.Object {
				w.genMember(`"responseJsonSchema":`, s)
			}
		}
	}
	if e := word(v[rqEffort], &w.tmp); e != nil {
		budget := -1
		switch string(e) {
		case "none":
			budget = 0
		case "minimal":
			budget = BudgetMinimal
		case "low":
			budget = BudgetLow
		case "medium":
			budget = BudgetMedium
		case "high":
			budget = BudgetHigh
		case "xhigh", "max":
			budget = BudgetMax
		default:
			return reqErr("reasoning_effort", "unknown effort")
		}
		if budget == 0 {
			w.genMember(`"thinkingConfig":`, []byte(`{"thinkingBudget":0}`))
		} else {
			w.genMember(`"thinkingConfig":{"thinkingBudget":`, nil)
			w.gen = strconv.AppendInt(w.gen, int64(budget), 10)
			w.gen = append(w.gen, `,"includeThoughts":true}`...)
		}
	}
	return nil
}
