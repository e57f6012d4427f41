package usage

// hit is a guardrail hit type with the record's fields: edge/guard's Hit
// (edge/guard depends on this package's importers, so it cannot be named).
type hit interface {
	~struct {
		Guardrail string `json:"guardrail"`
		Action    string `json:"action"`
	}
}

// SetGuardrails copies a request's guardrail outcome into e, out of the
// pooled request state it lives in (every surface — model calls, MCP tool
// calls, A2A, passthrough — records it the same way).
func SetGuardrails[H hit](e *Record, applied []string, enforced, monitor []H, bypassed string, failClosed bool) {
	e.AppliedGuardrails = append([]string(nil), applied...)
	e.GuardrailEnforcedHits = hits(enforced)
	e.GuardrailMonitorHits = hits(monitor)
	e.GuardrailBypassedReason, e.GuardrailBlockedFailClosed = bypassed, failClosed
}

// hits copies hits into the record's own type (nil for none).
func hits[H hit](hs []H) []GuardrailHit {
	if len(hs) == 0 {
		return nil
	}
	out := make([]GuardrailHit, len(hs))
	for i, h := range hs {
		out[i] = GuardrailHit(h)
	}
	return out
}
