// Package load is gw's load generator: it drives gw, the mock of gw/perf/mock or any
// compatible endpoint with OpenAI chat completion, Anthropic Messages or OpenAI Responses
// requests (Config.Format) and reports latency percentiles, error classes and, for
// streams, time to first byte, time to first token and the gaps between chunks. Command
// gwload (perf/cmd/gwload) wraps it; a scenario runner calls Run in-process.
//
// # Modes
//
// Open loop (Config.Rate > 0): request i is due at origin + i/Rate, whatever happened to
// the requests before it. Latency is measured from the due time, not from the moment the
// request went out, so a stall of the system under test is charged to every request it
// delayed (no coordinated omission). The worker pool grows on demand up to
// Config.Connections goroutines; a request that goes out more than Config.LateThreshold
// after its due time is a late send, and Result.LateSends says how many there were and by
// how much. Late sends mean the generator (or its machine) could not keep the timetable.
//
// Closed loop (Config.Rate == 0): Config.Connections workers each send their next request
// as soon as the previous one is done. Latency is measured from the actual send; the
// figure of merit is Result.RateAchievedRPS.
//
// Streaming (Config.Stream) works in both modes: the body gets "stream":true, and each
// response is read as Server-Sent Events while it arrives. The format says which events
// carry content (the first one is the TTFT) and which one ends the stream.
//
// # Cost
//
// The generator must not be the bottleneck on a small machine. Each worker owns a
// fasthttp.Request built once from a template (headers and body bytes are never
// re-encoded), a fasthttp.Response and an sse.Reader; a request records its figures into
// one of a few mutex-guarded histogram shards in a single critical section. The
// process's own CPU time over the run is reported in Result.Generator: when it nears
// GOMAXPROCS seconds per second, the figures measure the generator, not the target.
package load
