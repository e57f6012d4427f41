package converse

import (
	"bytes"
	"strconv"
	"sync"

	"gw/sse/msgconv"
	"gw/sse/rawjson"
)

// RequestOptions parameterize ChatRequestToConverse.
type RequestOptions struct {
	// Anthropic is set for Claude models: reasoning becomes
	// additionalModelRequestFields.thinking.
	Anthropic bool
}

type reqScratch struct {
	msgs []byte // the intermediate Messages body
	tmp  []byte
	docs int // documents named so far (Converse wants unique names)
}

var reqPool = sync.Pool{New: func() any { return new(reqScratch) }}

func reqErr(msg string) error { return &convError{ErrInvalidRequest, msg} }

// ChatRequestToConverse appends to dst the Converse request body for the
// chat completions request body and returns it (see the package comment
// for the mapping). The model id is not part of the body: it goes in the
// URL. On error dst is returned unchanged and the error wraps
// ErrInvalidRequest.
func ChatRequestToConverse(dst, body []byte, opt RequestOptions) ([]byte, error) {
	c := reqPool.Get().(*reqScratch)
	defer func() {
		c.msgs, c.tmp = keep(c.msgs), keep(c.tmp)
		reqPool.Put(c)
	}()
	m, err := msgconv.ChatRequestToMessages(c.msgs[:0], body, msgconv.RequestOptions{})
	if err != nil {
		return dst, &convError{ErrInvalidRequest, err.Error()}
	}
	c.msgs, c.docs = m, 0
	var v [9][]byte
	if rawjson.ScanTop(m, msgKeys, v[:]) != nil {
		return dst, reqErr("the body is not a JSON object")
	}
	n := len(dst)
	dst = append(dst, `{"messages":`...)
	if dst, err = c.appendMessages(dst, v[mMessages]); err != nil {
		return dst[:n], err
	}
	if sys := v[mSystem]; sys != nil {
		if dst, err = c.appendSystem(dst, sys); err != nil {
			return dst[:n], err
		}
	}
	// inferenceConfig
	callerMax := hasAny(body, "max_tokens", "max_completion_tokens")
	thinking := opt.Anthropic && v[mThinking] != nil && !rawjson.StringEquals(firstString(v[mThinking], "type"), "disabled")
	var ic [4]bool
	ic[0] = (callerMax || thinking) && v[mMaxTokens] != nil
	ic[1] = v[mTemperature] != nil && rawjson.KindOf(v[mTemperature]) == rawjson.Number
	ic[2] = v[mTopP] != nil && rawjson.KindOf(v[mTopP]) == rawjson.Number
	ic[3] = rawjson.KindOf(v[mStop]) == rawjson.Array
	if ic[0] || ic[1] || ic[2] || ic[3] {
		dst = append(dst, `,"inferenceConfig":{`...)
		sep := false
		field := func(name string, val []byte) {
			if sep {
				dst = append(dst, ',')
			}
			sep = true
			dst = append(dst, '"')
			dst = append(dst, name...)
			dst = append(dst, `":`...)
			dst = append(dst, val...)
		}
		if ic[0] {
			field("maxTokens", v[mMaxTokens])
		}
		if ic[1] {
			field("temperature", v[mTemperature])
		}
		if ic[2] {
			field("topP", v[mTopP])
		}
		if ic[3] {
			field("stopSequences", v[mStop])
		}
		dst = append(dst, '}')
	}
	if rawjson.KindOf(v[mTools]) == rawjson.Array {
		if dst, err = appendToolConfig(dst, v[mTools], v[mToolChoice]); err != nil {
			return dst[:n], err
		}
	}
	if thinking {
		dst = append(dst, `,"additionalModelRequestFields":{"thinking":`...)
		dst = append(dst, v[mThinking]...)
		dst = append(dst, '}')
	}
	return append(dst, '}'), nil
}

var msgKeys = []string{"messages", "system", "max_tokens", "temperature", "top_p", "stop_sequences", "tools", "tool_choice", "thinking"}

const (
	mMessages = iota
	mSystem
	mMaxTokens
	mTemperature
	mTopP
	mStop
	mTools
	mToolChoice
	mThinking
)

// hasAny reports whether the object body has one of the top-level keys
// with a non-null value.
func hasAny(body []byte, keys ...string) bool {
	for _, k := range keys {
		if v, kind, ok := rawjson.Get(body, k); ok && kind != rawjson.Null && v != nil {
			return true
		}
	}
	return false
}

func firstString(obj []byte, key string) []byte {
	v, _, _ := rawjson.Get(obj, key)
	return v
}

// appendSystem appends `"system":[...]` for a Messages system (a string or
// text blocks, a cache_control becoming a cachePoint after its block).
func (c *reqScratch) appendSystem(dst, sys []byte) ([]byte, error) {
	switch rawjson.KindOf(sys) {
	case rawjson.String:
		if len(sys) <= 2 {
			return dst, nil
		}
		dst = append(dst, `,"system":[{"text":`...)
		dst = append(dst, sys...)
		return append(dst, "}]"...), nil
	case rawjson.Array:
		dst = append(dst, `,"system":[`...)
		first := true
		err := rawjson.ForEachElem(sys, func(_ int, b []byte, _ rawjson.Kind) bool {
			t, _, _ := rawjson.Get(b, "text")
			if rawjson.KindOf(t) != rawjson.String {
				return true
			}
			if !first {
				dst = append(dst, ',')
			}
			first = false
			dst = append(dst, `{"text":`...)
			dst = append(dst, t...)
			dst = append(dst, '}')
			dst = appendCachePoint(dst, b)
			return true
		})
		if err != nil {
			return dst, reqErr("system is malformed")
		}
		return append(dst, ']'), nil
	}
	return dst, nil
}

// appendCachePoint appends `,{"cachePoint":...}` when block has a
// cache_control.
func appendCachePoint(dst, block []byte) []byte {
	cc, kind, ok := rawjson.Get(block, "cache_control")
	if !ok || kind != rawjson.Object {
		return dst
	}
	dst = append(dst, `,{"cachePoint":{"type":"default"`...)
	if ttl, _, ok := rawjson.Get(cc, "ttl"); ok && rawjson.KindOf(ttl) == rawjson.String {
		dst = append(dst, `,"ttl":`...)
		dst = append(dst, ttl...)
	}
	return append(dst, "}}"...)
}

func (c *reqScratch) appendMessages(dst, msgs []byte) ([]byte, error) {
	if rawjson.KindOf(msgs) != rawjson.Array {
		return dst, reqErr("messages must be an array")
	}
	dst = append(dst, '[')
	var err error
	_ = rawjson.ForEachElem(msgs, func(i int, m []byte, _ rawjson.Kind) bool {
		role, _, _ := rawjson.Get(m, "role")
		content, kind, _ := rawjson.Get(m, "content")
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"role":`...)
		dst = append(dst, role...)
		dst = append(dst, `,"content":[`...)
		switch kind {
		case rawjson.String:
			dst = append(dst, `{"text":`...)
			dst = append(dst, content...)
			dst = append(dst, '}')
		case rawjson.Array:
			first := true
			_ = rawjson.ForEachElem(content, func(_ int, b []byte, _ rawjson.Kind) bool {
				n := len(dst)
				if !first {
					dst = append(dst, ',')
				}
				var ok bool
				dst, ok, err = c.appendBlock(dst, b)
				if err != nil {
					return false
				}
				if !ok {
					dst = dst[:n]
					return true
				}
				first = false
				return true
			})
		default:
			err = reqErr("a message has no content")
		}
		dst = append(dst, "]}"...)
		return err == nil
	})
	if err != nil {
		return dst, err
	}
	return append(dst, ']'), nil
}

var blockKeys = []string{"type", "text", "source", "id", "name", "input", "tool_use_id", "content", "is_error", "thinking", "signature", "data"}

const (
	bType = iota
	bText
	bSource
	bID
	bName
	bInput
	bToolUseID
	bContent
	bIsError
	bThinking
	bSignature
	bData
)

// appendBlock appends the Converse form of one Messages content block; ok
// is false for a block with no Converse form (dropped).
func (c *reqScratch) appendBlock(dst, b []byte) ([]byte, bool, error) {
	var w [12][]byte
	if rawjson.ScanTop(b, blockKeys, w[:]) != nil {
		return dst, false, reqErr("a content block is not an object")
	}
	typ, _ := inner(w[bType])
	switch string(typ) {
	case "text":
		if len(w[bText]) <= 2 {
			return dst, false, nil // Converse rejects blank text blocks
		}
		dst = append(dst, `{"text":`...)
		dst = append(dst, w[bText]...)
		dst = append(dst, '}')
		return appendCachePoint(dst, b), true, nil
	case "image", "document":
		return c.appendMedia(dst, typ, w[bSource])
	case "tool_use":
		dst = append(dst, `{"toolUse":{"toolUseId":`...)
		dst = append(dst, w[bID]...)
		dst = append(dst, `,"name":`...)
		dst = append(dst, w[bName]...)
		dst = append(dst, `,"input":`...)
		if w[bInput] == nil {
			dst = append(dst, "{}"...)
		} else {
			dst = append(dst, w[bInput]...)
		}
		return append(dst, "}}"...), true, nil
	case "tool_result":
		dst = append(dst, `{"toolResult":{"toolUseId":`...)
		dst = append(dst, w[bToolUseID]...)
		dst = append(dst, `,"content":[`...)
		switch rawjson.KindOf(w[bContent]) {
		case rawjson.String:
			dst = append(dst, `{"text":`...)
			dst = append(dst, w[bContent]...)
			dst = append(dst, '}')
		case rawjson.Array:
			first := true
			var err error
			_ = rawjson.ForEachElem(w[bContent], func(_ int, cb []byte, _ rawjson.Kind) bool {
				n := len(dst)
				if !first {
					dst = append(dst, ',')
				}
				var ok bool
				dst, ok, err = c.appendBlock(dst, cb)
				if err != nil {
					return false
				}
				if !ok {
					dst = dst[:n]
				} else {
					first = false
				}
				return true
			})
			if err != nil {
				return dst, false, err
			}
			if first {
				dst = append(dst, `{"text":""}`...)
			}
		default:
			dst = append(dst, `{"text":""}`...)
		}
		dst = append(dst, ']')
		if bytes.Equal(w[bIsError], []byte("true")) {
			dst = append(dst, `,"status":"error"`...)
		}
		return append(dst, "}}"...), true, nil
	case "thinking":
		dst = append(dst, `{"reasoningContent":{"reasoningText":{"text":`...)
		dst = append(dst, orEmpty(w[bThinking])...)
		if rawjson.KindOf(w[bSignature]) == rawjson.String {
			dst = append(dst, `,"signature":`...)
			dst = append(dst, w[bSignature]...)
		}
		return append(dst, "}}}"...), true, nil
	case "redacted_thinking":
		dst = append(dst, `{"reasoningContent":{"redactedContent":`...)
		dst = append(dst, orEmpty(w[bData])...)
		return append(dst, "}}"...), true, nil
	}
	return dst, false, nil
}

func orEmpty(s []byte) []byte {
	if rawjson.KindOf(s) != rawjson.String {
		return []byte(`""`)
	}
	return s
}

var sourceKeys = []string{"type", "media_type", "data", "url"}

// appendMedia appends an image or document block: base64 sources become
// bytes, s3:// URLs an s3Location; other URLs cannot be sent to Bedrock.
func (c *reqScratch) appendMedia(dst, typ, src []byte) ([]byte, bool, error) {
	var s [4][]byte
	if rawjson.ScanTop(src, sourceKeys, s[:]) != nil {
		return dst, false, reqErr("an image or file part has no source")
	}
	st, _ := inner(s[0])
	mt, _ := inner(s[1])
	format := mediaFormat(mt)
	if string(typ) == "image" {
		switch format {
		case "png", "jpeg", "gif", "webp":
		default:
			if string(st) != "url" {
				return dst, false, reqErr("Bedrock accepts png, jpeg, gif and webp images")
			}
		}
	}
	var source []byte
	switch string(st) {
	case "base64":
		c.tmp = append(c.tmp[:0], `{"bytes":`...)
		c.tmp = append(c.tmp, s[2]...)
		c.tmp = append(c.tmp, '}')
		source = c.tmp
	case "url":
		u, _ := inner(s[3])
		if !bytes.HasPrefix(u, []byte("s3://")) {
			return dst, false, reqErr("Bedrock takes images and files as data URLs (base64) or s3:// URLs, not http(s) URLs")
		}
		if format == "" {
			format = extFormat(u)
		}
		c.tmp = append(c.tmp[:0], `{"s3Location":{"uri":`...)
		c.tmp = append(c.tmp, s[3]...)
		c.tmp = append(c.tmp, "}}"...)
		source = c.tmp
	default:
		return dst, false, reqErr("an image or file part has an unsupported source")
	}
	if string(typ) == "image" {
		dst = append(dst, `{"image":{"format":"`...)
		dst = append(dst, format...)
		dst = append(dst, `","source":`...)
	} else {
		if format == "" {
			format = "txt"
		}
		dst = append(dst, `{"document":{"format":"`...)
		dst = append(dst, format...)
		dst = append(dst, `","name":"document-`...)
		c.docs++
		dst = strconv.AppendInt(dst, int64(c.docs), 10)
		dst = append(dst, `","source":`...)
	}
	dst = append(dst, source...)
	return append(dst, "}}"...), true, nil
}

// mediaFormat maps a media type to Converse's format enum.
func mediaFormat(mt []byte) string {
	switch string(mt) {
	case "image/png":
		return "png"
	case "image/jpeg", "image/jpg":
		return "jpeg"
	case "image/gif":
		return "gif"
	case "image/webp":
		return "webp"
	case "application/pdf":
		return "pdf"
	case "text/csv":
		return "csv"
	case "text/html":
		return "html"
	case "text/markdown":
		return "md"
	case "text/plain":
		return "txt"
	case "application/msword":
		return "doc"
	case "application/vnd.openxmlformats-officedocument.wordprocessingml.document":
		return "docx"
	case "application/vnd.ms-excel":
		return "xls"
	case "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet":
		return "xlsx"
	}
	return ""
}

func extFormat(u []byte) string {
	i := bytes.LastIndexByte(u, '.')
	if i < 0 {
		return ""
	}
	switch string(bytes.ToLower(u[i+1:])) {
	case "png":
		return "png"
	case "jpg", "jpeg":
		return "jpeg"
	case "gif":
		return "gif"
	case "webp":
		return "webp"
	case "pdf":
		return "pdf"
	}
	return ""
}

// appendToolConfig appends toolConfig for Messages tools and tool_choice.
func appendToolConfig(dst, tools, choice []byte) ([]byte, error) {
	dst = append(dst, `,"toolConfig":{"tools":[`...)
	var err error
	_ = rawjson.ForEachElem(tools, func(i int, t []byte, _ rawjson.Kind) bool {
		var w [3][]byte
		if rawjson.ScanTop(t, toolKeys, w[:]) != nil || rawjson.KindOf(w[0]) != rawjson.String {
			err = reqErr("a tool has no name")
			return false
		}
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"toolSpec":{"name":`...)
		dst = append(dst, w[0]...)
		if rawjson.KindOf(w[1]) == rawjson.String && len(w[1]) > 2 {
			dst = append(dst, `,"description":`...)
			dst = append(dst, w[1]...)
		}
		dst = append(dst, `,"inputSchema":{"json":`...)
		if w[2] == nil {
			dst = append(dst, `{"type":"object","properties":{}}`...)
		} else {
			dst = append(dst, w[2]...)
		}
		dst = append(dst, "}}}"...)
		dst = appendCachePoint(dst, t)
		return true
	})
	if err != nil {
		return dst, err
	}
	dst = append(dst, ']')
	if ct, _ := inner(firstString(choice, "type")); ct != nil {
		switch string(ct) {
		case "auto":
			dst = append(dst, `,"toolChoice":{"auto":{}}`...)
		case "any":
			dst = append(dst, `,"toolChoice":{"any":{}}`...)
		case "tool":
			dst = append(dst, `,"toolChoice":{"tool":{"name":`...)
			dst = append(dst, orEmpty(firstString(choice, "name"))...)
			dst = append(dst, "}}"...)
		}
	}
	return append(dst, '}'), nil
}

var toolKeys = []string{"name", "description", "input_schema"}
