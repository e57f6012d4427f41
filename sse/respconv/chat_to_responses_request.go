package respconv

import (
	"gw/sse/rawjson"
)

// ChatRequestToResponses converts a chat-completions request body into a
// Responses request body appended to dst, for a Responses-native upstream.
//
//   - model → opt.UpstreamModel (the caller's when empty); "store": false is
//     always sent (chat completions are not stored by default, Responses
//     are).
//   - messages → input items: system/developer/user messages keep their role
//     and position (text → input_text, image_url → input_image, file →
//     input_file, input_audio → input_audio); assistant text/refusal →
//     a message item with output_text/refusal parts, its tool_calls →
//     function_call items (id → call_id); tool messages →
//     function_call_output (tool_call_id → call_id; text parts joined).
//   - tools {type: function, function: {...}} → flat function tools; strict
//     defaults to false (the chat default; Responses would default to
//     true) and parameters to an empty object schema. Other tool types →
//     ErrUnsupported.
//   - tool_choice: strings as they are, {type: function, function: {name}}
//     → {type: function, name}, allowed_tools flattened likewise.
//   - max_completion_tokens (or max_tokens) → max_output_tokens;
//     reasoning_effort → reasoning.effort; response_format → text.format
//     (json_schema flattened); verbosity → text.verbosity.
//   - stream, temperature, top_p, user, metadata, parallel_tool_calls,
//     safety_identifier, prompt_cache_key, service_tier pass through;
//     stream_options, seed, logprobs, penalties, logit_bias and unknown
//     members are dropped.
//
// n > 1, stop, audio output, the legacy functions/function_call members and
// the function role return an error wrapping ErrUnsupported. The body must
// be valid JSON (checked in full). On error dst is returned unchanged.
func ChatRequestToResponses(dst, body []byte, opt RequestOptions) ([]byte, error) {
	if !rawjson.Valid(body) {
		return dst, fieldErr(ErrInvalid, "", "the request body is not valid JSON")
	}
	var v [len(chatReqKeys)][]byte
	if err := rawjson.ScanTop(body, chatReqKeys[:], v[:]); err != nil {
		return dst, fieldErr(ErrInvalid, "", "the request body is not a JSON object")
	}
	if n, ok := rawjson.ParseInt(v[crN]); ok && n > 1 {
		return dst, fieldErr(ErrUnsupported, "n", "a Responses model returns one choice")
	}
	for _, i := range [...]int{crStop, crAudio, crFunctions, crFunctionCall} {
		if k := rawjson.KindOf(v[i]); k != rawjson.Invalid && k != rawjson.Null {
			return dst, fieldErr(ErrUnsupported, chatReqKeys[i], "has no Responses API equivalent")
		}
	}
	orig := len(dst)
	dst = append(dst, `{"model":`...)
	switch {
	case opt.UpstreamModel != "":
		dst = rawjson.AppendQuote(dst, opt.UpstreamModel)
	case rawjson.KindOf(v[crModel]) == rawjson.String:
		dst = append(dst, v[crModel]...)
	default:
		return dst[:orig], fieldErr(ErrInvalid, "model", "missing")
	}
	if rawjson.KindOf(v[crMessages]) != rawjson.Array {
		return dst[:orig], fieldErr(ErrInvalid, "messages", "must be an array")
	}
	dst = append(dst, `,"input":[`...)
	n := 0
	var err error
	_ = rawjson.ForEachElem(v[crMessages], func(i int, msg []byte, kind rawjson.Kind) bool {
		dst, n, err = appendInputItems(dst, n, i, msg, kind)
		return err == nil
	})
	if err != nil {
		return dst[:orig], err
	}
	dst = append(dst, `],"store":false`...)
	if dst, err = appendResponsesTools(dst, v[crTools]); err != nil {
		return dst[:orig], err
	}
	if dst, err = appendResponsesToolChoice(dst, v[crToolChoice]); err != nil {
		return dst[:orig], err
	}
	maxTokens := v[crMaxCompletion]
	if rawjson.KindOf(maxTokens) != rawjson.Number {
		maxTokens = v[crMaxTokens]
	}
	dst = appendKV(dst, "max_output_tokens", maxTokens)
	if rawjson.KindOf(v[crEffort]) == rawjson.String {
		dst = append(dst, `,"reasoning":{"effort":`...)
		dst = append(dst, v[crEffort]...)
		dst = append(dst, '}')
	}
	if dst, err = appendTextConfig(dst, v[crResponseFormat], v[crVerbosity]); err != nil {
		return dst[:orig], err
	}
	for _, i := range [...]int{crStream, crTemperature, crTopP, crUser, crMetadata, crParallel, crSafetyID, crCacheKey, crServiceTier} {
		dst = appendKV(dst, chatReqKeys[i], v[i])
	}
	return append(dst, '}'), nil
}

var chatReqKeys = [...]string{
	"model", "messages", "tools", "tool_choice", "max_completion_tokens", "max_tokens", "temperature", "top_p",
	"reasoning_effort", "response_format", "verbosity", "stream", "user", "metadata", "parallel_tool_calls",
	"safety_identifier", "prompt_cache_key", "service_tier", "n", "stop", "audio", "functions", "function_call",
}

const (
	crModel = iota
	crMessages
	crTools
	crToolChoice
	crMaxCompletion
	crMaxTokens
	crTemperature
	crTopP
	crEffort
	crResponseFormat
	crVerbosity
	crStream
	crUser
	crMetadata
	crParallel
	crSafetyID
	crCacheKey
	crServiceTier
	crN
	crStop
	crAudio
	crFunctions
	crFunctionCall
)

var chatMessageKeys = []string{"role", "content", "tool_calls", "tool_call_id", "refusal"}

// appendInputItems converts messages[i] into input items; n counts the
// items written so far.
func appendInputItems(dst []byte, n, i int, msg []byte, kind rawjson.Kind) ([]byte, int, error) {
	f := fpath{base: "messages", i: i}
	if kind != rawjson.Object {
		return dst, n, fieldErr(ErrInvalid, f.String(), "must be an object")
	}
	var v [5][]byte // role, content, tool_calls, tool_call_id, refusal
	_ = rawjson.ScanTop(msg, chatMessageKeys, v[:])
	role, content := v[0], v[1]
	sep := func() {
		if n > 0 {
			dst = append(dst, ',')
		}
		n++
	}
	var err error
	switch {
	case rawjson.StringEquals(role, "system") || rawjson.StringEquals(role, "developer") || rawjson.StringEquals(role, "user"):
		sep()
		dst = append(dst, `{"type":"message","role":`...)
		dst = append(dst, role...)
		dst = append(dst, `,"content":`...)
		switch rawjson.KindOf(content) {
		case rawjson.String:
			dst = append(dst, content...)
		case rawjson.Array:
			if dst, err = appendInputParts(dst, content, fpath{"messages", i, ".content"}); err != nil {
				return dst, n, err
			}
		default:
			return dst, n, fieldErr(ErrInvalid, f.String()+".content", "must be a string or an array of parts")
		}
		return append(dst, '}'), n, nil

	case rawjson.StringEquals(role, "assistant"):
		hasText := nonEmptyStr(content) || (rawjson.KindOf(content) == rawjson.Array && len(content) > 2)
		if hasText || nonEmptyStr(v[4]) {
			sep()
			dst = append(dst, `{"type":"message","role":"assistant","content":[`...)
			parts := 0
			switch rawjson.KindOf(content) {
			case rawjson.String:
				if nonEmptyStr(content) {
					dst = appendOutputTextPart(dst, content)
					parts++
				}
			case rawjson.Array:
				_ = rawjson.ForEachElem(content, func(j int, p []byte, _ rawjson.Kind) bool {
					var pv [3][]byte // type, text, refusal
					_ = rawjson.ScanTop(p, partKeys, pv[:])
					if parts > 0 {
						dst = append(dst, ',')
					}
					switch {
					case rawjson.StringEquals(pv[0], "text") && rawjson.KindOf(pv[1]) == rawjson.String:
						dst = appendOutputTextPart(dst, pv[1])
					case rawjson.StringEquals(pv[0], "refusal") && rawjson.KindOf(pv[2]) == rawjson.String:
						dst = append(dst, `{"type":"refusal","refusal":`...)
						dst = append(dst, pv[2]...)
						dst = append(dst, '}')
					default:
						err = fieldErr(ErrUnsupported, fpath{"messages", i, ".content"}.at(j, ".type"), "assistant content parts must be text or refusal")
						return false
					}
					parts++
					return true
				})
				if err != nil {
					return dst, n, err
				}
			}
			if nonEmptyStr(v[4]) {
				if parts > 0 {
					dst = append(dst, ',')
				}
				dst = append(dst, `{"type":"refusal","refusal":`...)
				dst = append(dst, v[4]...)
				dst = append(dst, '}')
			}
			dst = append(dst, "]}"...)
		}
		switch rawjson.KindOf(v[2]) {
		case rawjson.Array:
			_ = rawjson.ForEachElem(v[2], func(j int, tc []byte, _ rawjson.Kind) bool {
				var t [2][]byte // id, function
				_ = rawjson.ScanTop(tc, idFunctionKeys, t[:])
				var fn [2][]byte // name, arguments
				_ = rawjson.ScanTop(t[1], nameArgsKeys, fn[:])
				switch {
				case !nonEmptyStr(t[0]):
					err = fieldErr(ErrInvalid, fpath{"messages", i, ".tool_calls"}.at(j, ".id"), "missing")
				case !nonEmptyStr(fn[0]):
					err = fieldErr(ErrInvalid, fpath{"messages", i, ".tool_calls"}.at(j, ".function.name"), "missing")
				}
				if err != nil {
					return false
				}
				sep()
				dst = append(dst, `{"type":"function_call","call_id":`...)
				dst = append(dst, t[0]...)
				dst = append(dst, `,"name":`...)
				dst = append(dst, fn[0]...)
				dst = append(dst, `,"arguments":`...)
				if rawjson.KindOf(fn[1]) == rawjson.String {
					dst = append(dst, fn[1]...)
				} else {
					dst = append(dst, `"{}"`...)
				}
				dst = append(dst, '}')
				return true
			})
		case rawjson.Invalid, rawjson.Null:
		default:
			err = fieldErr(ErrInvalid, f.String()+".tool_calls", "must be an array")
		}
		return dst, n, err

	case rawjson.StringEquals(role, "tool"):
		if !nonEmptyStr(v[3]) {
			return dst, n, fieldErr(ErrInvalid, f.String()+".tool_call_id", "missing")
		}
		sep()
		dst = append(dst, `{"type":"function_call_output","call_id":`...)
		dst = append(dst, v[3]...)
		dst = append(dst, `,"output":`...)
		switch rawjson.KindOf(content) {
		case rawjson.String:
			dst = append(dst, content...)
		case rawjson.Array:
			// Text parts joined: every Responses upstream takes a string.
			dst = append(dst, '"')
			_ = rawjson.ForEachElem(content, func(j int, p []byte, _ rawjson.Kind) bool {
				var pv [3][]byte
				_ = rawjson.ScanTop(p, partKeys, pv[:])
				if !rawjson.StringEquals(pv[0], "text") || rawjson.KindOf(pv[1]) != rawjson.String {
					err = fieldErr(ErrUnsupported, fpath{"messages", i, ".content"}.at(j, ".type"), "tool content parts must be text")
					return false
				}
				dst = append(dst, strBody(pv[1])...)
				return true
			})
			if err != nil {
				return dst, n, err
			}
			dst = append(dst, '"')
		default:
			return dst, n, fieldErr(ErrInvalid, f.String()+".content", "must be a string or an array of parts")
		}
		return append(dst, '}'), n, nil
	}
	if rawjson.StringEquals(role, "function") {
		return dst, n, fieldErr(ErrUnsupported, f.String()+".role", "the legacy function role has no Responses API equivalent; use tool")
	}
	return dst, n, fieldErr(ErrInvalid, f.String()+".role", "must be system, developer, user, assistant or tool")
}

func appendOutputTextPart(dst, text []byte) []byte {
	dst = append(dst, `{"type":"output_text","text":`...)
	dst = append(dst, text...)
	return append(dst, `,"annotations":[]}`...)
}

var chatPartKeys = []string{"type", "text", "image_url", "input_audio", "file"}

// appendInputParts converts chat user/system content parts into Responses
// input parts.
func appendInputParts(dst, parts []byte, field fpath) ([]byte, error) {
	var err error
	dst = append(dst, '[')
	_ = rawjson.ForEachElem(parts, func(j int, p []byte, kind rawjson.Kind) bool {
		var v [5][]byte
		if kind == rawjson.Object {
			_ = rawjson.ScanTop(p, chatPartKeys, v[:])
		}
		if j > 0 {
			dst = append(dst, ',')
		}
		switch {
		case rawjson.StringEquals(v[0], "text"):
			if rawjson.KindOf(v[1]) != rawjson.String {
				err = fieldErr(ErrInvalid, field.at(j, ".text"), "must be a string")
				return false
			}
			dst = append(dst, `{"type":"input_text","text":`...)
			dst = append(dst, v[1]...)
			dst = append(dst, '}')
		case rawjson.StringEquals(v[0], "image_url"):
			var img [2][]byte // url, detail
			_ = rawjson.ScanTop(v[2], imageKeys, img[:])
			if rawjson.KindOf(img[0]) != rawjson.String {
				err = fieldErr(ErrInvalid, field.at(j, ".image_url.url"), "must be a string")
				return false
			}
			dst = append(dst, `{"type":"input_image","image_url":`...)
			dst = append(dst, img[0]...)
			if rawjson.KindOf(img[1]) == rawjson.String {
				dst = appendKV(dst, "detail", img[1])
			} else {
				dst = append(dst, `,"detail":"auto"`...)
			}
			dst = append(dst, '}')
		case rawjson.StringEquals(v[0], "input_audio"):
			if rawjson.KindOf(v[3]) != rawjson.Object {
				err = fieldErr(ErrInvalid, field.at(j, ".input_audio"), "must be an object")
				return false
			}
			dst = append(dst, `{"type":"input_audio","input_audio":`...)
			dst = append(dst, v[3]...)
			dst = append(dst, '}')
		case rawjson.StringEquals(v[0], "file"):
			var fv [3][]byte // file_id, file_data, filename
			_ = rawjson.ScanTop(v[4], fileKeys, fv[:])
			dst = append(dst, `{"type":"input_file"`...)
			dst = appendKV(dst, "file_id", fv[0])
			dst = appendKV(dst, "file_data", fv[1])
			dst = appendKV(dst, "filename", fv[2])
			dst = append(dst, '}')
		default:
			err = fieldErr(ErrUnsupported, field.at(j, ".type"), "unsupported content part type")
			return false
		}
		return true
	})
	if err != nil {
		return dst, err
	}
	return append(dst, ']'), nil
}

var (
	imageKeys = []string{"url", "detail"}
	fileKeys  = []string{"file_id", "file_data", "filename"}
)

var chatToolKeys = []string{"type", "function"}
var chatFuncKeys = []string{"name", "description", "parameters", "strict"}

// appendResponsesTools converts chat tools into flat Responses function tools.
func appendResponsesTools(dst, tools []byte) ([]byte, error) {
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
		var v [2][]byte
		if kind == rawjson.Object {
			_ = rawjson.ScanTop(t, chatToolKeys, v[:])
		}
		if !rawjson.StringEquals(v[0], "function") {
			err = fieldErr(ErrUnsupported, path("tools", i)+".type", "unsupported tool type: only function tools are converted")
			return false
		}
		var fv [4][]byte
		_ = rawjson.ScanTop(v[1], chatFuncKeys, fv[:])
		if !nonEmptyStr(fv[0]) {
			err = fieldErr(ErrInvalid, path("tools", i)+".function.name", "missing")
			return false
		}
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"type":"function","name":`...)
		dst = append(dst, fv[0]...)
		dst = appendKV(dst, "description", fv[1])
		if rawjson.KindOf(fv[2]) == rawjson.Object {
			dst = appendKV(dst, "parameters", fv[2])
		} else {
			dst = append(dst, `,"parameters":{"type":"object","properties":{}}`...)
		}
		if k := rawjson.KindOf(fv[3]); k == rawjson.True || k == rawjson.False {
			dst = appendKV(dst, "strict", fv[3])
		} else {
			dst = append(dst, `,"strict":false`...)
		}
		dst = append(dst, '}')
		return true
	})
	if err != nil {
		return dst, err
	}
	return append(dst, ']'), nil
}

var allowedKeys = []string{"mode", "tools"}

// appendResponsesToolChoice converts a chat tool_choice.
func appendResponsesToolChoice(dst, tc []byte) ([]byte, error) {
	switch rawjson.KindOf(tc) {
	case rawjson.Invalid, rawjson.Null:
		return dst, nil
	case rawjson.String:
		return appendKV(dst, "tool_choice", tc), nil
	case rawjson.Object:
	default:
		return dst, fieldErr(ErrInvalid, "tool_choice", "must be a string or an object")
	}
	var v [2][]byte // type, function
	_ = rawjson.ScanTop(tc, chatToolKeys, v[:])
	switch {
	case rawjson.StringEquals(v[0], "function"):
		name, _, _ := rawjson.Get(v[1], "name")
		if !nonEmptyStr(name) {
			return dst, fieldErr(ErrInvalid, "tool_choice.function.name", "missing")
		}
		dst = append(dst, `,"tool_choice":{"type":"function","name":`...)
		dst = append(dst, name...)
		return append(dst, '}'), nil
	case rawjson.StringEquals(v[0], "allowed_tools"):
		at, _, _ := rawjson.Get(tc, "allowed_tools")
		var a [2][]byte // mode, tools
		_ = rawjson.ScanTop(at, allowedKeys, a[:])
		if rawjson.KindOf(a[1]) != rawjson.Array {
			return dst, fieldErr(ErrInvalid, "tool_choice.allowed_tools.tools", "must be an array")
		}
		dst = append(dst, `,"tool_choice":{"type":"allowed_tools","mode":`...)
		if rawjson.KindOf(a[0]) == rawjson.String {
			dst = append(dst, a[0]...)
		} else {
			dst = append(dst, `"auto"`...)
		}
		dst = append(dst, `,"tools":[`...)
		var err error
		_ = rawjson.ForEachElem(a[1], func(i int, t []byte, _ rawjson.Kind) bool {
			var tv [2][]byte
			_ = rawjson.ScanTop(t, chatToolKeys, tv[:])
			name, _, _ := rawjson.Get(tv[1], "name")
			if !rawjson.StringEquals(tv[0], "function") || !nonEmptyStr(name) {
				err = fieldErr(ErrUnsupported, path("tool_choice.allowed_tools.tools", i), "only function tools are converted")
				return false
			}
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = append(dst, `{"type":"function","name":`...)
			dst = append(dst, name...)
			dst = append(dst, '}')
			return true
		})
		if err != nil {
			return dst, err
		}
		return append(dst, "]}"...), nil
	}
	return dst, fieldErr(ErrUnsupported, "tool_choice.type", "only function tool choices are converted")
}

var jsonSchemaKeys = []string{"name", "schema", "strict", "description"}

// appendTextConfig converts response_format and verbosity into `text`.
func appendTextConfig(dst, rf, verbosity []byte) ([]byte, error) {
	hasFormat := rawjson.KindOf(rf) == rawjson.Object
	hasVerbosity := rawjson.KindOf(verbosity) == rawjson.String
	if !hasFormat && !hasVerbosity {
		return dst, nil
	}
	dst = append(dst, `,"text":{`...)
	if hasFormat {
		typ, _, _ := rawjson.Get(rf, "type")
		switch {
		case rawjson.StringEquals(typ, "json_schema"):
			js, _, _ := rawjson.Get(rf, "json_schema")
			var v [4][]byte
			_ = rawjson.ScanTop(js, jsonSchemaKeys, v[:])
			if !nonEmptyStr(v[0]) {
				return dst, fieldErr(ErrInvalid, "response_format.json_schema.name", "missing")
			}
			dst = append(dst, `"format":{"type":"json_schema","name":`...)
			dst = append(dst, v[0]...)
			dst = appendKV(dst, "schema", v[1])
			dst = appendKV(dst, "strict", v[2])
			dst = appendKV(dst, "description", v[3])
			dst = append(dst, '}')
		case rawjson.StringEquals(typ, "json_object"):
			dst = append(dst, `"format":{"type":"json_object"}`...)
		case rawjson.StringEquals(typ, "text"):
			dst = append(dst, `"format":{"type":"text"}`...)
		default:
			return dst, fieldErr(ErrUnsupported, "response_format.type", "unsupported response format")
		}
		if hasVerbosity {
			dst = append(dst, ',')
		}
	}
	if hasVerbosity {
		dst = append(dst, `"verbosity":`...)
		dst = append(dst, verbosity...)
	}
	return append(dst, '}'), nil
}
