package edge

import (
	"strconv"

	"gw/adapters"
	"gw/adapters/openai"
	"gw/sse/rawjson"
)

// The ensemble answer's usage (docs/ROUTING.md#ensemble): the judge's
// answer is what the caller receives, and its `usage` covers the whole
// panel — the members that answered plus the judge — so it agrees with
// the usage record, which bills them all. The judge's answer is rewritten
// in its chat form (buffered: before the conversion to the caller's
// format; streamed: the usage chunk before the event converter), so chat,
// Messages and Responses callers all get the sum. The call's own usage
// (c.usage) stays the judge's: finish adds the members' (c.addUsage).

// ensembleAnswer reports whether c's answer is an ensemble judge's whose
// usage needs the members' added.
func (c *call) ensembleAnswer() bool { return c.addUsage != (adapters.Usage{}) }

// appendPanelUsage appends chat answer (or chunk) body to dst with its
// usage object replaced by the sum of its counts and add's. It returns the
// body's own counts; ok is false (dst unchanged) when body has no usage
// object.
func appendPanelUsage(dst, body []byte, add *adapters.Usage) (out []byte, own adapters.Usage, ok bool) {
	own, ok = openai.ExtractUsage(body)
	if !ok {
		return dst, own, false
	}
	if own.Total == 0 {
		own.Total = own.Prompt + own.Completion
	}
	var raw [256]byte
	u := raw[:0]
	u = append(u, `{"prompt_tokens":`...)
	u = strconv.AppendInt(u, own.Prompt+add.Prompt, 10)
	u = append(u, `,"completion_tokens":`...)
	u = strconv.AppendInt(u, own.Completion+add.Completion, 10)
	u = append(u, `,"total_tokens":`...)
	u = strconv.AppendInt(u, own.Total+add.Total, 10)
	if n := own.Cached + add.Cached; n > 0 {
		u = append(u, `,"prompt_tokens_details":{"cached_tokens":`...)
		u = strconv.AppendInt(u, n, 10)
		u = append(u, '}')
	}
	if n := own.Reasoning + add.Reasoning; n > 0 {
		u = append(u, `,"completion_tokens_details":{"reasoning_tokens":`...)
		u = strconv.AppendInt(u, n, 10)
		u = append(u, '}')
	}
	u = append(u, '}')
	out, err := rawjson.Set(dst, body, "usage", u)
	if err != nil {
		return dst, own, false
	}
	return out, own, true
}
