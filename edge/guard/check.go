// Package guard is the guardrail engine of the request pipeline: the input
// policy stage (the request's texts judged before any upstream call) and
// the output policy stage (a buffered answer, or every streamed delta,
// judged before its bytes reach the caller).
//
// This file is the contract between the engine and the guardrail kinds.
// Each kind lives in its own sub-package (edge/guard/keyword,
// edge/guard/pii, edge/guard/custom, ...) and compiles a resources.Guardrail
// into a Checker once per snapshot. The engine extracts the texts, calls
// the chain's checkers in order, applies enforcement mode, fail-open rules
// and masks, and records the outcome; a kind only judges texts.
package guard

import "context"

// Phase says which side of the call a check judges.
type Phase uint8

const (
	Input  Phase = iota // the caller's request, before the upstream call
	Output              // the upstream's answer (buffered, or a stream window)
)

// Role is the author of a text. `developer` messages are judged as System.
type Role uint8

const (
	RoleUser Role = iota
	RoleSystem
	RoleAssistant
	RoleTool // a caller-sent tool result
)

// Part says where in a message a text sits.
type Part uint8

const (
	PartContent       Part = iota // message text or a text content block
	PartReasoning                 // reasoning / thinking text
	PartToolArguments             // a string value inside tool-call arguments
	PartToolResult                // a string value inside a caller-sent tool result
	PartToolKey                   // an object key inside a tool payload
	PartToolNumber                // a JSON number inside a tool payload (its literal text)
)

// Text is one value judged on its own: keyword and pii rules anchored to a
// whole value can fire; rules needing text across two values cannot (spec
// "guardrails"). Data is the decoded value (JSON escapes resolved). It is
// valid only during the Check call.
type Text struct {
	Role Role
	Part Part
	Data []byte
}

// Request is what one Check call judges. The engine owns it and reuses it
// between calls.
type Request struct {
	Phase Phase
	// Model is the alias the caller asked for (ctx.model for custom scripts).
	Model string
	// Texts in document order. On Output in a stream window this is one
	// assistant text (the window), or the whole answer in buffer_full mode.
	Texts []Text
}

// Action is a checker's decision. A larger value wins when a verdict merges
// several findings: Block over Rewrite over Allow.
type Action uint8

const (
	Allow   Action = iota
	Rewrite        // some texts must be masked (Verdict.Masks)
	Block
)

// Mask replaces Texts[Index].Data with Data.
type Mask struct {
	Index int
	Data  []byte
}

// Verdict is a checker's answer. The engine owns it, resets it before each
// Check and keeps its slices' capacity, so a checker that finds nothing
// allocates nothing.
type Verdict struct {
	Action Action
	// Rule names what fired (a detector, a pattern's kind, a custom
	// pattern's name, a script's reason code) for hit records and metrics.
	// It must never contain the matched value.
	Rule string
	// Message is safe to show the caller (a custom script's reason); empty
	// means the engine's generic text. It must never contain the matched value.
	Message string
	// Masks, for Action Rewrite: the rewritten texts, each once, by index.
	Masks []Mask
	// Buf is scratch for the Masks' Data: a checker appends replacement
	// text here and slices Masks[i].Data from it, so one buffer is reused
	// across calls.
	Buf []byte
}

// Reset clears v for the next Check, keeping capacity.
func (v *Verdict) Reset() {
	v.Action, v.Rule, v.Message = Allow, "", ""
	v.Masks, v.Buf = v.Masks[:0], v.Buf[:0]
}

// Checker judges texts for one guardrail. It is compiled once per snapshot
// and must be safe for concurrent use.
//
// Check fills v (reset by the engine) and returns nil, or an error when the
// check could not complete (a script that throws, times out or runs out of
// memory; an unreachable backend): the engine then applies the guardrail's
// fail_open / output_fail_open setting. An error's text may be logged, so it
// must never carry a matched value or a secret. ctx carries the deadline of
// kinds with timeout_ms; in-process kinds may ignore it.
type Checker interface {
	Check(ctx context.Context, req *Request, v *Verdict) error
}

// Hooks is implemented by checkers that judge only one phase (a custom
// script exporting only checkInput): the engine skips the other phase
// without calling Check. Checkers that do not implement it run on both.
type Hooks interface {
	Runs(p Phase) bool
}

// Buffered is implemented by checkers that judge a streamed answer only
// whole (kind semantic): an output chain holding one streams in
// buffer_full mode, whatever the other stages ask.
type Buffered interface {
	BuffersFull() bool
}
