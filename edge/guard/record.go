package guard

import "gw/edge/usage"

// Record copies the outcome's guardrail fields into a usage record, out of
// the pooled request state the outcome lives in (every surface — model
// calls, MCP tool calls, A2A, passthrough — records them the same way).
func (o *Outcome) Record(e *usage.Record) {
	e.AppliedGuardrails = append([]string(nil), o.Applied...)
	e.GuardrailEnforcedHits = usageHits(o.Enforced)
	e.GuardrailMonitorHits = usageHits(o.Monitor)
	e.GuardrailBypassedReason, e.GuardrailBlockedFailClosed = o.BypassedReason, o.BlockedFailClosed
}

// usageHits copies hits into the record's own type (nil for none).
func usageHits(hs []Hit) []usage.GuardrailHit {
	if len(hs) == 0 {
		return nil
	}
	out := make([]usage.GuardrailHit, len(hs))
	for i, h := range hs {
		out[i] = usage.GuardrailHit{Guardrail: h.Guardrail, Action: h.Action}
	}
	return out
}
