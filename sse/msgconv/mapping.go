package msgconv

import (
	"bytes"

	"gw/sse/transcode"
)

// The value tables shared by several directions (protocols.md §4.4, §4.7,
// §3.5). Every function takes the bare enum value (no quotes) and returns a
// constant, so none of them allocates.

// FinishReason maps an Anthropic stop_reason to a chat finish_reason.
// Unknown and empty reasons are "stop".
func FinishReason(stopReason []byte) string {
	switch string(stopReason) {
	case "max_tokens", "model_context_window_exceeded":
		return "length"
	case "tool_use":
		return "tool_calls"
	case "refusal":
		return "content_filter"
	}
	return "stop" // end_turn, stop_sequence, pause_turn
}

// StopReason maps a chat finish_reason to an Anthropic stop_reason.
// Unknown and empty reasons are "end_turn".
func StopReason(finishReason []byte) string {
	switch string(finishReason) {
	case "length":
		return "max_tokens"
	case "tool_calls", "function_call":
		return "tool_use"
	case "content_filter":
		return "refusal"
	}
	return "end_turn"
}

// ThinkingBudget returns the Anthropic thinking budget for a chat
// reasoning_effort: 0, true for "none" (no thinking), 0, false for an
// unknown value.
func ThinkingBudget(effort []byte) (int64, bool) {
	switch string(effort) {
	case "none":
		return 0, true
	case "minimal", "low":
		return BudgetLow, true
	case "medium":
		return BudgetMedium, true
	case "high":
		return BudgetHigh, true
	case "xhigh", "max":
		return BudgetXHigh, true
	}
	return 0, false
}

// EffortForBudget returns the chat reasoning_effort for an Anthropic
// thinking budget: under 2048 low, under 8192 medium, else high.
func EffortForBudget(budget int64) string {
	switch {
	case budget < 2048:
		return "low"
	case budget < 8192:
		return "medium"
	}
	return "high"
}

// isUpstreamCode reports whether code is one of the transcode failure codes
// (an upstream or transport failure) rather than a gateway rejection code
// such as content_filter or guardrail_unavailable.
func isUpstreamCode(code string) bool {
	switch code {
	case transcode.CodeServerError, transcode.CodeTimeout, transcode.CodeOverloaded,
		transcode.CodeRateLimit, transcode.CodeContextLength, transcode.CodeInsufficientQuota,
		transcode.CodeInvalidPrompt, transcode.CodeSlowDown, transcode.CodeUpstreamStreamFail:
		return true
	}
	return false
}

// chatErrorType is the chat error envelope's type for a failure code;
// unknown codes are gateway rejections (spec errors 4).
func chatErrorType(code string) string {
	if t := transcode.ChatErrorType(code); t != "" {
		return t
	}
	return "invalid_request_error"
}

// anthropicErrorType is the Anthropic error event's type for a failure code.
func anthropicErrorType(code string) string {
	switch code {
	case transcode.CodeOverloaded:
		return "overloaded_error"
	case transcode.CodeRateLimit, transcode.CodeSlowDown:
		return "rate_limit_error"
	case transcode.CodeTimeout:
		return "timeout_error"
	case transcode.CodeContextLength, transcode.CodeInvalidPrompt:
		return "invalid_request_error"
	case transcode.CodeInsufficientQuota:
		return "billing_error"
	case transcode.CodeServerError, transcode.CodeUpstreamStreamFail:
		return "api_error"
	}
	return "invalid_request_error" // a gateway rejection (spec errors 4)
}

// codeForAnthropicError maps an Anthropic error type (and, for
// invalid_request_error, its message) to a failure code.
func codeForAnthropicError(typ, msg []byte) string {
	switch string(typ) {
	case "overloaded_error":
		return transcode.CodeOverloaded
	case "rate_limit_error":
		return transcode.CodeRateLimit
	case "api_error":
		return transcode.CodeServerError
	case "timeout_error":
		return transcode.CodeTimeout
	case "billing_error":
		return transcode.CodeInsufficientQuota
	case "invalid_request_error", "request_too_large":
		if bytes.Contains(msg, strPromptTooLong) {
			return transcode.CodeContextLength
		}
		return transcode.CodeInvalidPrompt
	}
	return transcode.CodeUpstreamStreamFail
}

// anthropicTypeForChatError maps an OpenAI error chunk's code and type to an
// Anthropic error type.
func anthropicTypeForChatError(code, typ []byte) string {
	switch string(code) {
	case transcode.CodeOverloaded:
		return "overloaded_error"
	case transcode.CodeRateLimit, transcode.CodeSlowDown:
		return "rate_limit_error"
	case transcode.CodeContextLength, transcode.CodeInvalidPrompt:
		return "invalid_request_error"
	case transcode.CodeInsufficientQuota:
		return "billing_error"
	case transcode.CodeTimeout:
		return "timeout_error"
	}
	switch string(typ) {
	case "server_is_overloaded", "overloaded_error":
		return "overloaded_error"
	case "rate_limit_error", "requests", "tokens", "rate_limit_exceeded":
		return "rate_limit_error"
	case "invalid_request_error":
		return "invalid_request_error"
	case "insufficient_quota":
		return "billing_error"
	}
	return "api_error"
}
