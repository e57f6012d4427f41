package chatchunk

// A Chunk is also the delta value the second-stage converters (sse/msgconv,
// sse/respconv) consume: their Feed entry takes a filled Chunk, and their
// chat Event is Walk (or their generic reading) followed by Feed. A source
// converter that reads another wire format (sse/gemini) fills the same
// Chunk for each chat chunk it would otherwise write, and hands it to the
// second stage's Feed directly (a Sink): the chat JSON is never written
// and never walked again, and each second stage keeps one emitter for both
// inputs.
//
// Filled by a source, the members keep their meaning as raw JSON values
// (string literals for texts, ids and names, `"stop"` for Finish), sliced
// from the source where the source's literal is already what the chat chunk
// would carry, else from the source converter's scratch buffers (valid
// until its next call). Three members have no JSON form, for the shapes a
// source produces one at a time:
//
//   - Call (HasCall): one tool call, split into its members (what a
//     one-element delta.tool_calls array would hold; ToolCalls stays nil);
//   - Counted (HasCounted): the usage in chat terms (what the usage object
//     would hold; Usage stays nil);
//   - Done: the end of the chat stream (`data: [DONE]`).

// Sink is a second stage that takes filled Chunks: Feed appends the caller
// format's events for ck to dst, as its chat Event would for the chunk ck
// describes.
type Sink interface {
	Feed(dst []byte, ck *Chunk) ([]byte, error)
}
