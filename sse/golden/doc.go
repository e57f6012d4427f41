// Package golden holds checked-in golden transcripts of the stream
// transcoders (gw/sse/msgconv, gw/sse/respconv). It has no code of its own:
// everything is in golden_test.go.
//
// Every recorded provider stream in testdata/in (byte-for-byte copies of
// /work/shared/fixtures, see SOURCES.md there) is replayed through each
// transcoder direction that applies to its format, and the output is
// compared event by event with testdata/<direction>/<fixture>.golden:
//
//	chat_to_messages/          ChatToMessages
//	chat_to_responses/         ChatToResponses (SetRequest(nil))
//	messages_to_chat/          MessagesToChat
//	messages_to_responses/     MessagesToChat, then ChatToResponses
//	responses_to_chat/         ResponsesToChat (SetIncludeUsage(true))
//	responses_to_messages/     ResponsesToChat (SetIncludeUsage(true)), then ChatToMessages
//	chat_to_messages_to_chat/  ChatToMessages, then MessagesToChat (round trip)
//
// The composed directions go through chat completions, as the edge does
// (edge/stream.go: relayState.next feeds the chat frames an upstream
// converter writes, one by one and without event name, to the caller's
// converter; an in-band upstream error ends the stream without End). Every
// stream is Reset with the alias "alias-model" and, when the upstream ended
// cleanly, finished with End, whose output is part of the transcript.
//
// A golden file holds the exact bytes the last transcoder wrote. The test
// splits expected and actual output into events on "\n\n" and reports the
// first differing event by index. The same input read through sse.Reader in
// small random-size pieces (deterministic seeds) must give the same bytes.
//
// Input framing done by the test harness, not by the recordings: a .jsonl
// fixture holds one event's data JSON per line and is framed as
// "event: <type>\ndata: <line>\n\n"; the four streams of
// openai_responses_reasoning_summary_multi_request.jsonl are split at each
// response.created into golden files <fixture>.1.golden … .4.golden.
//
// Determinism: MessagesToChat stamps `created` with time.Now (Anthropic
// streams carry no timestamp), and ChatToResponses copies that value into
// `created_at`. Each case runs inside a testing/synctest bubble, whose fake
// clock reads 2000-01-01T00:00:00Z, so those fields are 946684800 in the
// golden files; nothing is normalised. All ids come from the upstream
// streams.
//
// Not applicable (no transcoder in this repository reads these formats):
// gemini_stream_text.sse, gemini_stream_function_call.sse (Gemini
// streamGenerateContent). bedrock_converse_stream_text_then_tool_use.eventstream is
// binary: bedrock_test.go replays it (testdata/bedrock/<direction>/).
//
// To regenerate the golden files after an intended change in a transcoder:
//
//	go test ./sse/golden -update
//
// then read the diff of testdata/ and check every changed event against
// /work/shared/protocols.md before committing it.
package golden
