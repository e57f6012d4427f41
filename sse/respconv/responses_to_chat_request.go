package respconv

import (
	"gw/sse/rawjson"
)

// ResponsesRequestToChat converts a Responses request body into a
// chat-completions request body appended to dst.
//
//   - model → opt.UpstreamModel (the caller's when empty).
//   - instructions → a leading system message.
//   - input: a string → one user message; items: message items (role
//     user/system/developer/assistant; parts input_text/output_text → text,
//     input_image → image_url, input_file → file, input_audio →
//     input_audio, refusal → refusal; a single text part of a non-user
//     message collapses to a string); function_call items → tool_calls of
//     one assistant message (merged with the assistant message just before
//     them; call_id → id); function_call_output → tool messages (call_id →
//     tool_call_id); reasoning items with an encrypted_content become the
//     thinking_blocks of the assistant message that follows them (the
//     Anthropic thinking ChatResponseToResponses put there, see
//     thinking.go); other reasoning items are dropped (OpenAI's encrypted
//     reasoning has no chat form).
//   - tools: function tools {type, name, description, parameters, strict}
//     → {type: function, function: {...}}; other tool types → ErrUnsupported.
//   - tool_choice: none/auto/required; {type: function, name}; allowed_tools.
//   - max_output_tokens → max_completion_tokens; reasoning.effort →
//     reasoning_effort; text.format json_schema/json_object →
//     response_format; text.verbosity → verbosity; stream → stream with
//     stream_options.include_usage true.
//   - temperature, top_p, user, metadata, parallel_tool_calls,
//     safety_identifier, prompt_cache_key, service_tier pass through;
//     truncation, include, max_tool_calls, top_logprobs, reasoning.summary
//     and unknown members are dropped.
//
// Stateful features return an error wrapping ErrStateful:
// previous_response_id, conversation, store: true, background: true,
// prompt (a stored template), item_reference items. Omitted store is
// accepted (gw stores nothing; responses say "store": false).
//
// The body must be valid JSON (checked in full). On error dst is returned
// unchanged and the error is a *FieldError naming the member.
func ResponsesRequestToChat(dst, body []byte, opt RequestOptions) ([]byte, error) {
	if valid, folded := rawjson.ValidNames(body); !valid {
		return dst, fieldErr(ErrInvalid, "", "the request body is not valid JSON")
	} else if folded != nil {
		return dst, rawjson.Folded(folded)
	}
	var v [len(respReqKeys)][]byte
	if err := rawjson.ScanTop(body, respReqKeys[:], v[:]); err != nil {
		return dst, fieldErr(ErrInvalid, "", "the request body is not a JSON object")
	}
	for _, i := range [...]int{rqPrevID, rqConversation, rqPrompt} {
		if k := rawjson.KindOf(v[i]); k != rawjson.Invalid && k != rawjson.Null {
			return dst, fieldErr(ErrStateful, respReqKeys[i], "needs server-side state; send the whole conversation in `input` instead")
		}
	}
	if rawjson.KindOf(v[rqStore]) == rawjson.True {
		return dst, fieldErr(ErrStateful, "store", "gw does not store responses; set `store` to false")
	}
	if rawjson.KindOf(v[rqBackground]) == rawjson.True {
		return dst, fieldErr(ErrStateful, "background", "background responses need server-side state")
	}
	orig := len(dst)
	dst = append(dst, `{"model":`...)
	switch {
	case opt.UpstreamModel != "":
		dst = rawjson.AppendQuote(dst, opt.UpstreamModel)
	case rawjson.KindOf(v[rqModel]) == rawjson.String:
		dst = append(dst, v[rqModel]...)
	default:
		return dst[:orig], fieldErr(ErrInvalid, "model", "missing")
	}
	dst = append(dst, `,"messages":[`...)
	w := msgWriter{dst: dst, input: v[rqInput], rsFirst: -1}
	switch rawjson.KindOf(v[rqInstructions]) {
	case rawjson.String:
		if len(v[rqInstructions]) > 2 {
			w.begin()
			w.dst = append(w.dst, `{"role":"system","content":`...)
			w.dst = append(w.dst, v[rqInstructions]...)
			w.dst = append(w.dst, '}')
		}
	case rawjson.Invalid, rawjson.Null:
	default:
		return dst[:orig], fieldErr(ErrInvalid, "instructions", "must be a string")
	}
	switch rawjson.KindOf(v[rqInput]) {
	case rawjson.String:
		w.begin()
		w.dst = append(w.dst, `{"role":"user","content":`...)
		w.dst = append(w.dst, v[rqInput]...)
		w.dst = append(w.dst, '}')
	case rawjson.Array:
		var err error
		_ = rawjson.ForEachElem(v[rqInput], func(i int, item []byte, kind rawjson.Kind) bool {
			err = w.item(i, item, kind)
			return err == nil
		})
		if err != nil {
			return dst[:orig], err
		}
	case rawjson.Invalid, rawjson.Null:
		if w.n == 0 {
			return dst[:orig], fieldErr(ErrInvalid, "input", "missing")
		}
	default:
		return dst[:orig], fieldErr(ErrInvalid, "input", "must be a string or an array of items")
	}
	w.closeAssistant()
	dst = append(w.dst, ']')

	var err error
	if dst, err = appendChatTools(dst, v[rqTools]); err != nil {
		return dst[:orig], err
	}
	if dst, err = appendChatToolChoice(dst, v[rqToolChoice]); err != nil {
		return dst[:orig], err
	}
	dst = appendKV(dst, "max_completion_tokens", v[rqMaxOutput])
	dst = appendKV(dst, "temperature", v[rqTemperature])
	dst = appendKV(dst, "top_p", v[rqTopP])
	if effort, _, _ := rawjson.Get(v[rqReasoning], "effort"); rawjson.KindOf(effort) == rawjson.String {
		dst = appendKV(dst, "reasoning_effort", effort)
	}
	if dst, err = appendResponseFormat(dst, v[rqText]); err != nil {
		return dst[:orig], err
	}
	if rawjson.KindOf(v[rqStream]) == rawjson.True {
		dst = append(dst, `,"stream":true,"stream_options":{"include_usage":true}`...)
	}
	for _, i := range [...]int{rqUser, rqMetadata, rqParallel, rqSafetyID, rqCacheKey, rqServiceTier} {
		dst = appendKV(dst, respReqKeys[i], v[i])
	}
	return append(dst, '}'), nil
}

var respReqKeys = [...]string{
	"model", "input", "instructions", "tools", "tool_choice", "max_output_tokens", "temperature", "top_p",
	"reasoning", "text", "stream", "user", "metadata", "parallel_tool_calls", "previous_response_id",
	"store", "conversation", "background", "prompt", "safety_identifier", "prompt_cache_key", "service_tier",
}

const (
	rqModel = iota
	rqInput
	rqInstructions
	rqTools
	rqToolChoice
	rqMaxOutput
	rqTemperature
	rqTopP
	rqReasoning
	rqText
	rqStream
	rqUser
	rqMetadata
	rqParallel
	rqPrevID
	rqStore
	rqConversation
	rqBackground
	rqPrompt
	rqSafetyID
	rqCacheKey
	rqServiceTier
)

// appendKV appends `,"key":raw` unless raw is absent or null.
func appendKV(dst []byte, key string, raw []byte) []byte {
	if k := rawjson.KindOf(raw); k == rawjson.Invalid || k == rawjson.Null {
		return dst
	}
	dst = append(dst, ',', '"')
	dst = append(dst, key...)
	dst = append(dst, '"', ':')
	return append(dst, raw...)
}

// msgWriter writes chat messages, keeping the last assistant message open
// so that function_call items that follow become its tool_calls.
type msgWriter struct {
	dst       []byte
	n         int  // messages written
	asstOpen  bool // the last message is an assistant message without its '}'
	toolsOpen bool // ... and its tool_calls array is open
	nTools    int
	// input is the input array; rsFirst..rsLast are the reasoning items
	// waiting for the assistant message they belong to (rsFirst -1: none).
	input           []byte
	rsFirst, rsLast int
}

// thinking appends the waiting reasoning items as `,"thinking_blocks":[…]`
// to the assistant message just opened.
func (w *msgWriter) thinking() {
	if w.rsFirst < 0 {
		return
	}
	first, last := w.rsFirst, w.rsLast
	w.rsFirst = -1
	mark := len(w.dst)
	w.dst = append(w.dst, `,"thinking_blocks":[`...)
	n := 0
	_ = rawjson.ForEachElem(w.input, func(i int, item []byte, _ rawjson.Kind) bool {
		if i < first {
			return true
		}
		var ok bool
		if w.dst, ok = appendThinkingBlock(w.dst, item, n); ok {
			n++
		}
		return i < last
	})
	if n == 0 {
		w.dst = w.dst[:mark]
		return
	}
	w.dst = append(w.dst, ']')
}

func (w *msgWriter) begin() {
	w.closeAssistant()
	if w.n > 0 {
		w.dst = append(w.dst, ',')
	}
	w.n++
}

func (w *msgWriter) closeAssistant() {
	if w.toolsOpen {
		w.dst = append(w.dst, ']')
	}
	if w.asstOpen {
		w.dst = append(w.dst, '}')
	}
	w.asstOpen, w.toolsOpen, w.nTools = false, false, 0
}

var inputItemKeys = []string{"type", "role", "content", "call_id", "name", "arguments", "output"}

const (
	iiType = iota
	iiRole
	iiContent
	iiCallID
	iiName
	iiArguments
	iiOutput
)

// item converts input[i].
func (w *msgWriter) item(i int, item []byte, kind rawjson.Kind) error {
	if kind != rawjson.Object {
		return fieldErr(ErrInvalid, path("input", i), "must be an object")
	}
	var v [7][]byte
	_ = rawjson.ScanTop(item, inputItemKeys, v[:])
	typ := v[iiType]
	switch {
	case rawjson.StringEquals(typ, "message") || (rawjson.KindOf(typ) == rawjson.Invalid && v[iiRole] != nil):
		return w.message(i, v[iiRole], v[iiContent])
	case rawjson.StringEquals(typ, "function_call"):
		if !nonEmptyStr(v[iiCallID]) {
			return fieldErr(ErrInvalid, path("input", i)+".call_id", "missing")
		}
		if !nonEmptyStr(v[iiName]) {
			return fieldErr(ErrInvalid, path("input", i)+".name", "missing")
		}
		if !w.asstOpen {
			w.begin()
			w.dst = append(w.dst, `{"role":"assistant","content":null`...)
			w.thinking()
			w.asstOpen = true
		}
		if w.toolsOpen {
			w.dst = append(w.dst, ',')
		} else {
			w.dst = append(w.dst, `,"tool_calls":[`...)
			w.toolsOpen = true
		}
		w.dst = append(w.dst, `{"id":`...)
		w.dst = append(w.dst, v[iiCallID]...)
		w.dst = append(w.dst, `,"type":"function","function":{"name":`...)
		w.dst = append(w.dst, v[iiName]...)
		w.dst = append(w.dst, `,"arguments":`...)
		if nonEmptyStr(v[iiArguments]) {
			w.dst = append(w.dst, v[iiArguments]...)
		} else {
			w.dst = append(w.dst, `"{}"`...)
		}
		w.dst = append(w.dst, "}}"...)
		w.nTools++
		return nil
	case rawjson.StringEquals(typ, "function_call_output"):
		if !nonEmptyStr(v[iiCallID]) {
			return fieldErr(ErrInvalid, path("input", i)+".call_id", "missing")
		}
		w.begin()
		w.rsFirst = -1
		w.dst = append(w.dst, `{"role":"tool","tool_call_id":`...)
		w.dst = append(w.dst, v[iiCallID]...)
		w.dst = append(w.dst, `,"content":`...)
		switch rawjson.KindOf(v[iiOutput]) {
		case rawjson.String:
			w.dst = append(w.dst, v[iiOutput]...)
		case rawjson.Array:
			var err error
			w.dst, _, err = appendChatParts(w.dst, v[iiOutput], fpath{"input", i, ".output"}, false)
			if err != nil {
				return err
			}
		default:
			return fieldErr(ErrInvalid, path("input", i)+".output", "must be a string or an array of parts")
		}
		w.dst = append(w.dst, '}')
		return nil
	case rawjson.StringEquals(typ, "reasoning"):
		// It belongs to the assistant message that follows; the assistant
		// message already open stays open across it.
		if w.rsFirst < 0 {
			w.rsFirst = i
		}
		w.rsLast = i
		return nil
	case rawjson.StringEquals(typ, "item_reference"):
		return fieldErr(ErrStateful, path("input", i), "item_reference needs server-side state; send the item itself")
	case rawjson.KindOf(typ) == rawjson.String:
		return fieldErr(ErrUnsupported, path("input", i)+".type", "unsupported input item type "+string(typ))
	}
	return fieldErr(ErrInvalid, path("input", i), "an input item needs a type or a role")
}

// message converts a message item.
func (w *msgWriter) message(i int, role, content []byte) error {
	var roleName string
	switch {
	case rawjson.StringEquals(role, "user"):
		roleName = "user"
	case rawjson.StringEquals(role, "assistant"):
		roleName = "assistant"
	case rawjson.StringEquals(role, "system"):
		roleName = "system"
	case rawjson.StringEquals(role, "developer"):
		roleName = "developer"
	default:
		return fieldErr(ErrInvalid, path("input", i)+".role", "must be user, assistant, system or developer")
	}
	w.begin()
	w.dst = append(w.dst, `{"role":"`...)
	w.dst = append(w.dst, roleName...)
	w.dst = append(w.dst, `","content":`...)
	switch rawjson.KindOf(content) {
	case rawjson.String:
		w.dst = append(w.dst, content...)
	case rawjson.Array:
		var err error
		w.dst, _, err = appendChatParts(w.dst, content, fpath{"input", i, ".content"}, roleName == "user")
		if err != nil {
			return err
		}
	default:
		return fieldErr(ErrInvalid, path("input", i)+".content", "must be a string or an array of parts")
	}
	if roleName == "assistant" {
		w.thinking()
		w.asstOpen = true // function_call items that follow join it
		return nil
	}
	w.rsFirst = -1 // reasoning before a user, system or developer message has no turn to join
	w.dst = append(w.dst, '}')
	return nil
}

var partInKeys = []string{"type", "text", "image_url", "file_id", "detail", "file_data", "filename", "file_url", "input_audio", "refusal"}

const (
	piType = iota
	piText
	piImageURL
	piFileID
	piDetail
	piFileData
	piFilename
	piFileURL
	piInputAudio
	piRefusal
)

// appendChatParts converts Responses content parts into chat content: an
// array of parts, or — for non-user content (media false) holding exactly
// one text part — that text as a string. It reports the parts written.
func appendChatParts(dst, parts []byte, field fpath, media bool) ([]byte, int, error) {
	orig := len(dst)
	n := 0
	var single []byte // the only text literal, when n == 1
	var err error
	dst = append(dst, '[')
	_ = rawjson.ForEachElem(parts, func(j int, p []byte, kind rawjson.Kind) bool {
		if kind != rawjson.Object {
			err = fieldErr(ErrInvalid, field.at(j, ""), "must be an object")
			return false
		}
		var v [10][]byte
		_ = rawjson.ScanTop(p, partInKeys, v[:])
		typ := v[piType]
		if n > 0 {
			dst = append(dst, ',')
		}
		switch {
		case rawjson.StringEquals(typ, "input_text") || rawjson.StringEquals(typ, "output_text") || rawjson.StringEquals(typ, "text"):
			if rawjson.KindOf(v[piText]) != rawjson.String {
				err = fieldErr(ErrInvalid, field.at(j, ".text"), "must be a string")
				return false
			}
			dst = append(dst, `{"type":"text","text":`...)
			dst = append(dst, v[piText]...)
			dst = append(dst, '}')
			single = v[piText]
		case rawjson.StringEquals(typ, "refusal") && !media:
			if rawjson.KindOf(v[piRefusal]) != rawjson.String {
				err = fieldErr(ErrInvalid, field.at(j, ".refusal"), "must be a string")
				return false
			}
			dst = append(dst, `{"type":"refusal","refusal":`...)
			dst = append(dst, v[piRefusal]...)
			dst = append(dst, '}')
			single = nil
		case rawjson.StringEquals(typ, "input_image") && media:
			if rawjson.KindOf(v[piImageURL]) != rawjson.String {
				if v[piFileID] != nil {
					err = fieldErr(ErrUnsupported, field.at(j, ".file_id"), "images by file_id have no chat-completions equivalent; send image_url")
				} else {
					err = fieldErr(ErrInvalid, field.at(j, ".image_url"), "missing")
				}
				return false
			}
			dst = append(dst, `{"type":"image_url","image_url":{"url":`...)
			dst = append(dst, v[piImageURL]...)
			dst = appendKV(dst, "detail", v[piDetail])
			dst = append(dst, "}}"...)
			single = nil
		case rawjson.StringEquals(typ, "input_file") && media:
			if v[piFileURL] != nil {
				err = fieldErr(ErrUnsupported, field.at(j, ".file_url"), "files by URL have no chat-completions equivalent; send file_data or file_id")
				return false
			}
			dst = append(dst, `{"type":"file","file":{`...)
			m := len(dst)
			dst = appendKV(dst, "file_id", v[piFileID])
			dst = appendKV(dst, "file_data", v[piFileData])
			dst = appendKV(dst, "filename", v[piFilename])
			if len(dst) > m {
				dst = append(dst[:m], dst[m+1:]...) // drop the leading comma
			}
			dst = append(dst, "}}"...)
			single = nil
		case rawjson.StringEquals(typ, "input_audio") && media:
			if rawjson.KindOf(v[piInputAudio]) != rawjson.Object {
				err = fieldErr(ErrInvalid, field.at(j, ".input_audio"), "must be an object")
				return false
			}
			dst = append(dst, `{"type":"input_audio","input_audio":`...)
			dst = append(dst, v[piInputAudio]...)
			dst = append(dst, '}')
			single = nil
		default:
			err = fieldErr(ErrUnsupported, field.at(j, ".type"), "unsupported content part type "+string(typ))
			return false
		}
		n++
		return true
	})
	if err != nil {
		return dst[:orig], 0, err
	}
	if !media && n == 1 && single != nil {
		return append(dst[:orig], single...), 1, nil
	}
	return append(dst, ']'), n, nil
}

var respToolKeys = []string{"type", "name", "description", "parameters", "strict"}

// appendChatTools converts Responses tools into chat tools.
func appendChatTools(dst, tools []byte) ([]byte, error) {
	switch rawjson.KindOf(tools) {
	case rawjson.Invalid, rawjson.Null:
		return dst, nil
	case rawjson.Array:
	default:
		return dst, fieldErr(ErrInvalid, "tools", "must be an array")
	}
	var err error
	dst = append(dst, `,"tools":[`...)
	_ = rawjson.ForEachElem(tools, func(i int, t []byte, kind rawjson.Kind) bool {
		var v [5][]byte
		if kind == rawjson.Object {
			_ = rawjson.ScanTop(t, respToolKeys, v[:])
		}
		if !rawjson.StringEquals(v[0], "function") {
			msg := "unsupported tool type"
			if rawjson.KindOf(v[0]) == rawjson.String {
				msg += " " + string(v[0]) + ": only function tools can be served by a chat-completions model"
			}
			err = fieldErr(ErrUnsupported, path("tools", i)+".type", msg)
			return false
		}
		if !nonEmptyStr(v[1]) {
			err = fieldErr(ErrInvalid, path("tools", i)+".name", "missing")
			return false
		}
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"type":"function","function":{"name":`...)
		dst = append(dst, v[1]...)
		dst = appendKV(dst, "description", v[2])
		dst = appendKV(dst, "parameters", v[3])
		dst = appendKV(dst, "strict", v[4])
		dst = append(dst, "}}"...)
		return true
	})
	if err != nil {
		return dst, err
	}
	return append(dst, ']'), nil
}

var choiceObjKeys = []string{"type", "name", "mode", "tools"}

// appendChatToolChoice converts a Responses tool_choice.
func appendChatToolChoice(dst, tc []byte) ([]byte, error) {
	switch rawjson.KindOf(tc) {
	case rawjson.Invalid, rawjson.Null:
		return dst, nil
	case rawjson.String:
		if rawjson.StringEquals(tc, "none") || rawjson.StringEquals(tc, "auto") || rawjson.StringEquals(tc, "required") {
			return appendKV(dst, "tool_choice", tc), nil
		}
		return dst, fieldErr(ErrInvalid, "tool_choice", "must be none, auto, required or an object")
	case rawjson.Object:
	default:
		return dst, fieldErr(ErrInvalid, "tool_choice", "must be a string or an object")
	}
	var v [4][]byte
	_ = rawjson.ScanTop(tc, choiceObjKeys, v[:])
	switch {
	case rawjson.StringEquals(v[0], "function"):
		if !nonEmptyStr(v[1]) {
			return dst, fieldErr(ErrInvalid, "tool_choice.name", "missing")
		}
		dst = append(dst, `,"tool_choice":{"type":"function","function":{"name":`...)
		dst = append(dst, v[1]...)
		return append(dst, "}}"...), nil
	case rawjson.StringEquals(v[0], "allowed_tools"):
		if rawjson.KindOf(v[3]) != rawjson.Array {
			return dst, fieldErr(ErrInvalid, "tool_choice.tools", "must be an array")
		}
		dst = append(dst, `,"tool_choice":{"type":"allowed_tools","allowed_tools":{"mode":`...)
		if rawjson.KindOf(v[2]) == rawjson.String {
			dst = append(dst, v[2]...)
		} else {
			dst = append(dst, `"auto"`...)
		}
		dst = append(dst, `,"tools":[`...)
		var err error
		_ = rawjson.ForEachElem(v[3], func(i int, t []byte, _ rawjson.Kind) bool {
			var tv [2][]byte
			_ = rawjson.ScanTop(t, choiceObjKeys[:2], tv[:])
			if !rawjson.StringEquals(tv[0], "function") || !nonEmptyStr(tv[1]) {
				err = fieldErr(ErrUnsupported, path("tool_choice.tools", i), "only function tools can be allowed on a chat-completions model")
				return false
			}
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = append(dst, `{"type":"function","function":{"name":`...)
			dst = append(dst, tv[1]...)
			dst = append(dst, "}}"...)
			return true
		})
		if err != nil {
			return dst, err
		}
		return append(dst, "]}}"...), nil
	}
	return dst, fieldErr(ErrUnsupported, "tool_choice.type", "only function tool choices can be served by a chat-completions model")
}

var textFormatKeys = []string{"type", "name", "schema", "strict", "description"}

// appendResponseFormat converts text.format and text.verbosity.
func appendResponseFormat(dst, text []byte) ([]byte, error) {
	switch rawjson.KindOf(text) {
	case rawjson.Invalid, rawjson.Null:
		return dst, nil
	case rawjson.Object:
	default:
		return dst, fieldErr(ErrInvalid, "text", "must be an object")
	}
	format, _, _ := rawjson.Get(text, "format")
	if rawjson.KindOf(format) == rawjson.Object {
		var v [5][]byte
		_ = rawjson.ScanTop(format, textFormatKeys, v[:])
		switch {
		case rawjson.StringEquals(v[0], "json_schema"):
			if !nonEmptyStr(v[1]) {
				return dst, fieldErr(ErrInvalid, "text.format.name", "missing")
			}
			dst = append(dst, `,"response_format":{"type":"json_schema","json_schema":{"name":`...)
			dst = append(dst, v[1]...)
			dst = appendKV(dst, "schema", v[2])
			dst = appendKV(dst, "strict", v[3])
			dst = appendKV(dst, "description", v[4])
			dst = append(dst, "}}"...)
		case rawjson.StringEquals(v[0], "json_object"):
			dst = append(dst, `,"response_format":{"type":"json_object"}`...)
		case rawjson.StringEquals(v[0], "text"):
		default:
			return dst, fieldErr(ErrUnsupported, "text.format.type", "unsupported text format")
		}
	}
	verbosity, _, _ := rawjson.Get(text, "verbosity")
	return appendKV(dst, "verbosity", verbosity), nil
}
