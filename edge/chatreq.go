package edge

import (
	"errors"

	"gw/adapters"
	"gw/sse/rawjson"
)

// chatRequest is what policy needs from a chat-completions body. Everything
// else is forwarded byte-for-byte. Slices alias the request body.
type chatRequest struct {
	Model        []byte // unquoted alias (aliases the body when it has no escapes)
	Stream       bool
	IncludeUsage bool // stream_options.include_usage
	// thinking: some message has a thinking_blocks member. It describes
	// scanned, the body scanChatRequest read.
	thinking bool
	scanned  []byte
	modelRaw []byte // the model member's raw value in scanned, when it occurs once
	modelBuf [128]byte
}

// isScanned reports whether body is the one scanChatRequest read.
func (cr *chatRequest) isScanned(body []byte) bool {
	return len(body) > 0 && len(body) == len(cr.scanned) && &body[0] == &cr.scanned[0]
}

// shape is what BuildChat may take from the scan of body.
func (cr *chatRequest) shape(body []byte) adapters.BodyShape {
	if !cr.isScanned(body) {
		return adapters.BodyShape{}
	}
	return adapters.BodyShape{NoThinkingBlocks: !cr.thinking, Model: cr.modelRaw}
}

var chatKeys = []string{"model", "stream", "stream_options", "messages"}

// chatRequestError is a caller error found while scanning the body.
type chatRequestError struct {
	code, param, msg string
}

var (
	errBodyNotJSON      = &chatRequestError{"invalid_json", "", "We could not parse the JSON body of your request. The body must be a JSON object."}
	errModelMissing     = &chatRequestError{"missing_required_parameter", "model", "you must provide a model parameter"}
	errModelNotString   = &chatRequestError{"invalid_type", "model", "model must be a string"}
	errMessagesMissing  = &chatRequestError{"missing_required_parameter", "messages", "you must provide a messages parameter"}
	errMessagesNotArray = &chatRequestError{"invalid_type", "messages", "messages must be an array"}
	errMessageNotObject = &chatRequestError{"invalid_type", "messages", "each message must be an object"}
	errStreamNotBool    = &chatRequestError{"invalid_type", "stream", "stream must be a boolean"}
)

// validRole: the lowercase roles the spec accepts; anything else, any other
// case included, is rejected before an upstream call. A role spelled with
// escapes is compared decoded, as the provider's parser would read it.
func validRole(quoted []byte, esc bool) bool {
	for _, r := range [...]string{"user", "assistant", "system", "developer", "tool"} {
		if rawjson.KeyIs(quoted, esc, r) {
			return true
		}
	}
	return false
}

// scanChatRequest validates body and extracts the policy fields in one
// validating pass over the body plus one walk over messages. badRole is
// the index of the first message with an invalid role, or -1.
func scanChatRequest(body []byte, out *chatRequest) (badRole int, err *chatRequestError) {
	badRole = -1
	out.thinking, out.scanned, out.modelRaw = false, nil, nil // set again below for an accepted body
	if rawjson.KindOf(body) != rawjson.Object {
		return badRole, errBodyNotJSON
	}
	var vals [4][]byte
	dup, scanErr := rawjson.ScanTopValid(body, chatKeys, vals[:])
	if scanErr != nil {
		return badRole, errBodyNotJSON
	}
	model, stream, streamOpts, messages := vals[0], vals[1], vals[2], vals[3]
	switch {
	case model == nil:
		return badRole, errModelMissing
	case rawjson.KindOf(model) != rawjson.String:
		return badRole, errModelNotString
	}
	if hasBackslash(model) {
		m, e := rawjson.AppendUnquote(out.modelBuf[:0], model)
		if e != nil {
			return badRole, errModelNotString
		}
		out.Model = m
	} else {
		out.Model = model[1 : len(model)-1]
	}
	switch rawjson.KindOf(stream) {
	case rawjson.True:
		out.Stream = true
	case rawjson.False, rawjson.Null, rawjson.Invalid:
	default:
		return badRole, errStreamNotBool
	}
	if streamOpts != nil && rawjson.KindOf(streamOpts) == rawjson.Object {
		if v, _, ok := rawjson.Get(streamOpts, "include_usage"); ok && rawjson.KindOf(v) == rawjson.True {
			out.IncludeUsage = true
		}
	}
	switch {
	case messages == nil:
		return badRole, errMessagesMissing
	case rawjson.KindOf(messages) != rawjson.Array:
		return badRole, errMessagesNotArray
	}
	// One forward walk over the messages reads each one's role and
	// whether it carries thinking_blocks (which OpenAI-family adapters
	// strip): every byte of the conversation is read once more after the
	// validation above, not twice (finding each element's end, then its
	// members).
	var msgErr *chatRequestError
	thinking := false
	var c rawjson.Cursor
	c.Reset(messages)
	c.Begin()
	for i := 0; c.More(); i++ {
		if c.Kind() != rawjson.Object {
			msgErr = errMessageNotObject
			break
		}
		c.Begin()
		var role []byte
		var roleEsc bool
		for c.More() {
			key, esc := c.Key()
			val, _, valEsc := c.Value()
			switch {
			case rawjson.KeyIs(key, esc, "role"):
				role, roleEsc = val, valEsc // the last of duplicates, as a JSON parser reads it
			case rawjson.KeyIs(key, esc, "thinking_blocks"):
				thinking = true
			}
		}
		if c.Err() != nil || rawjson.KindOf(role) != rawjson.String || !validRole(role, roleEsc) {
			badRole = i
			break
		}
	}
	if badRole < 0 && msgErr == nil {
		out.thinking, out.scanned = thinking, body
		if dup&1 == 0 { // "model" once: BuildChat may replace it in place
			out.modelRaw = model
		}
	}
	return badRole, msgErr
}

func hasBackslash(b []byte) bool {
	for _, c := range b {
		if c == '\\' {
			return true
		}
	}
	return false
}

// ChatInfo is the exported view of what policy reads from a chat body (used
// by the fuzz targets and tools; the hot path uses scanChatRequest directly).
type ChatInfo struct {
	Model        string
	Stream       bool
	IncludeUsage bool
	BadRole      int // index of the first message with an invalid role, or -1
}

// ParseChatRequest validates a chat-completions body as the proxy does.
// The error text is the caller-facing message.
func ParseChatRequest(body []byte) (ChatInfo, error) {
	var cr chatRequest
	bad, err := scanChatRequest(body, &cr)
	if err != nil {
		return ChatInfo{BadRole: -1}, errors.New(err.msg)
	}
	return ChatInfo{Model: string(cr.Model), Stream: cr.Stream, IncludeUsage: cr.IncludeUsage, BadRole: bad}, nil
}
