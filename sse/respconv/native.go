package respconv

import (
	"strconv"

	"gw/sse/rawjson"
	"gw/sse/transcode"
)

// Helpers for native Responses streams (caller and upstream both speak the
// Responses API): the edge relays the upstream's events and only needs to
// read usage and, when the upstream fails mid-stream, end the caller's
// stream the way the API does.

// ParseUsage reads a Responses usage object (input_tokens, output_tokens,
// total_tokens and their details) in chat terms.
func ParseUsage(raw []byte) (transcode.Usage, bool) { return parseUsage(raw, false) }

// AppendFailed appends a `response.failed` event that ends a native stream
// gw has to cut short. seq is the event's sequence_number, id and created
// the response's id and created_at as the upstream sent them (JSON literals;
// empty when unknown), model the alias (plain or as a JSON literal); code is a
// transcode.Code* value (mapped with ResponsesErrorCode).
func AppendFailed(dst []byte, seq int64, id, created, model []byte, code, message string) []byte {
	dst = append(dst, "event: response.failed\ndata: {\"type\":\"response.failed\",\"sequence_number\":"...)
	dst = strconv.AppendInt(dst, seq, 10)
	dst = append(dst, `,"response":{"id":`...)
	if rawjson.KindOf(id) == rawjson.String {
		dst = append(dst, id...)
	} else {
		dst = append(dst, `"resp_gw_failed"`...)
	}
	dst = append(dst, `,"object":"response","created_at":`...)
	if rawjson.KindOf(created) == rawjson.Number {
		dst = append(dst, created...)
	} else {
		dst = append(dst, '0')
	}
	dst = append(dst, `,"status":"failed","model":`...)
	dst = appendModel(dst, model)
	dst = append(dst, `,"output":[],"error":{"code":"`...)
	dst = append(dst, ResponsesErrorCode(code)...)
	dst = append(dst, `","message":`...)
	dst = rawjson.AppendQuote(dst, message)
	return append(dst, "},\"incomplete_details\":null,\"usage\":null}}\n\n"...)
}
