// Package mock is a fast fake LLM provider for gw's end-to-end tests, `make run` and the
// perf suite. It speaks OpenAI Chat Completions, OpenAI Responses and Anthropic Messages
// (one file per wire format: openai_chat.go, openai_responses.go, anthropic_messages.go,
// openai_models.go, vertex.go for Google Vertex AI; Bedrock will follow) and answers from pre-rendered
// fragments on fasthttp, so it is never the bottleneck of a perf run: rendering a
// request's answer allocates nothing.
//
// # Endpoints
//
//	POST .../chat/completions   chat.completion, or an SSE stream of chat.completion.chunk
//	                            (any prefix: /v1/chat/completions, /openai/v1/chat/completions,
//	                            /chat/completions, Azure's /openai/deployments/x/chat/completions)
//	POST .../responses          OpenAI Responses: a response object, or its SSE event stream
//	POST .../messages           Anthropic Messages: a message object, or its SSE event stream;
//	                            requires the anthropic-version header
//	POST .../messages/count_tokens  {"input_tokens":N}, N estimated as prompt_tokens
//	GET  .../models             {"object":"list","data":[...]} from Config.Models
//	GET  .../models/{id}        one model object, for any id
//	GET  /_mock/requests        the last recorded requests, oldest first (JSON array)
//	DELETE /_mock/requests      forget them
//	GET  /_mock/stats           counters (requests, in_flight, streams, errors, cuts)
//	DELETE /_mock/stats         zero the counters except in_flight
//	POST /v1/traces             OTLP/HTTP traces receiver (protobuf, gzip or not): counts the
//	                            spans, for gw's otlp_http usage exporter (otlp.go)
//	GET  /_mock/otlp            OTLP receiver counts (requests, rejected, spans) and the last 16 spans
//	DELETE /_mock/otlp          forget them
//
// /_mock/ and /v1/traces requests are neither recorded, counted nor subject to knobs.
//
// # Answers
//
// The answer echoes the requested model (plus model_suffix). Its content is chunks ×
// chunk_size bytes of fixed ASCII filler text; stream chunk i carries bytes
// [i×chunk_size, (i+1)×chunk_size), so a buffered answer's content equals the
// concatenated content of the same request streamed. usage.prompt_tokens is
// max(1, len(body)/4) (decompressed body); completion_tokens is the number of content
// events: chunks, or for tool calls tool_calls × (1 + argument fragments).
//
// A stream is: a role chunk (delta {"role":"assistant","content":""}), the content chunks,
// a chunk with finish_reason "stop" (or "tool_calls"), then, only when the request has
// stream_options.include_usage, a chunk with "choices":[] and the usage, then
// data: [DONE]. With include_usage every other chunk carries "usage":null, as OpenAI does.
// Each event is flushed as written. Tool calls follow
// testdata/openai_chat_parallel_tool_calls_include_usage.sse: per call, one event with
// index, id, type, function.name and arguments "", then argument fragments of chunk_size
// bytes; all calls carry the same arguments, {"query":"<filler>"}, about chunks ×
// chunk_size bytes long.
//
// Requests without model or messages, with an empty messages array or with a body that is
// not a JSON object get a 400 with OpenAI's wording.
//
// The Responses and Anthropic answers carry the same content, tool calls and token
// counts in their own shapes, as recorded in testdata/openai_responses_* and
// testdata/anthropic_*: a Responses stream is response.created, response.in_progress, the
// message item (output_item.added, content_part.added, output_text.delta per chunk,
// output_text.done, content_part.done, output_item.done) or one function_call item per
// tool call (output_item.added, function_call_arguments.delta per fragment,
// function_call_arguments.done, output_item.done), then response.completed, every event
// with its sequence_number. An Anthropic stream is message_start, content_block_start,
// ping, content_block_delta per chunk, content_block_stop, message_delta, message_stop;
// tool calls are tool_use blocks whose input_json_delta fragments start with "".
// Anthropic errors use {"type":"error","error":{"type","message"}} with the type
// Anthropic gives the status (401 authentication_error, 429 rate_limit_error, 529
// overloaded_error, ...).
//
// # Knobs
//
// Every knob has a server default (Config.Knobs, or the -<knob-with-dashes> flag of Main)
// and can be overridden per request, in increasing precedence, by
//
//   - a path segment /knobs/<name>=<value>,<name>=<value>/ anywhere before the endpoint,
//     e.g. an upstream base URL http://127.0.0.1:8090/knobs/status=503,retry_after=2/v1;
//     values are percent-decoded (%2C is a comma) and a bare name means true;
//   - a header x-mock-<name>: <value>.
//
// Names are case-insensitive and '-' equals '_' (x-mock-chunk-size, x-mock-chunk_size).
// An unknown knob or a bad value is answered with 400 and a "mock: ..." message.
//
//	chunks             content chunks (default 5); 0 gives a stream with no content chunk
//	chunk_size         content bytes per chunk (default 8)
//	chunk_delay        pause between content events of a stream (Go duration: 10ms)
//	first_token_delay  pause between a stream's response headers (flushed at once) and
//	                   its first event
//	latency            pause before the response headers, any endpoint, buffered or not
//	status             answer with this HTTP status (>= 300) and the error envelope
//	                   {"error":{"message","type","param","code"}}; 429 has type
//	                   "requests" and code "rate_limit_exceeded", 401 code
//	                   "invalid_api_key", 5xx type "server_error". Applies to every
//	                   endpoint, before the body is read.
//	error_body         raw body of the error answer instead of the envelope; "empty"
//	                   sends no body; alone it implies status 500
//	retry_after        Retry-After header value of the error answer
//	fail_after         K: stream the opening events (chat: the role chunk) and K content
//	                   events, then close the connection without the terminating chunk
//	                   (no finish chunk, no [DONE], message_stop or response.completed);
//	                   clients see an unexpected EOF. A buffered request is closed
//	                   before any response byte. -1 or off disables.
//	stall_after        K: after K content events, send nothing for stall_for, then go on
//	                   (K at or past the last event stalls before the finish chunk);
//	                   -1 or off disables
//	stall_for          length of the stall (default 30s)
//	stream_error_after K: after K content events, end the stream (HTTP 200, properly
//	                   terminated body) with the format's mid-stream error: Chat
//	                   data: {"error":{...,"type":"server_error"}}; Anthropic event: error
//	                   with overloaded_error; Responses an error event (code
//	                   server_is_overloaded) then response.failed. -1 or off disables.
//	empty_stream       the stream is only data: [DONE]; Anthropic and Responses
//	                   streams have no event at all
//	no_done            omit the terminator: data: [DONE], Anthropic message_stop,
//	                   Responses response.completed
//	model_suffix       appended to the requested model in answers: with -2024-08-06,
//	                   gpt-4o is answered as gpt-4o-2024-08-06
//	tool_calls         N: answer with N parallel tool calls, named after the request's
//	                   tools round-robin (mock_tool_<i> when it declares none), with
//	                   finish_reason "tool_calls". As a server default it applies only
//	                   to requests that declare tools; per request it always applies
//	                   (tool_calls=0 turns a default off).
//
// Pauses end early when Shutdown begins; streams then end without their terminator.
//
// # Use
//
// In tests:
//
//	ln, _ := net.Listen("tcp", "127.0.0.1:0")
//	m := mock.New(mock.Config{Knobs: mock.Knobs{ModelSuffix: "-2024-08-06"}})
//	go m.Serve(ln)
//	defer m.Shutdown()
//	// ... point gw at "http://"+ln.Addr().String()+"/v1", then inspect m.Requests(), m.Stats().
//
// As a program: perf/cmd/gwmock, or `gw mock`, both calling Main. Perf runs should pass
// -record=false.
package mock
