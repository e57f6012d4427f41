// Package multipart streams a multipart/form-data request body (RFC 7578,
// framing from RFC 2046 section 5.1) from the caller to the upstream in
// bounded memory, rewriting text fields on the way. It serves the upload
// endpoints (/v1/audio/transcriptions, /v1/audio/translations,
// /v1/images/edits), whose files may be hundreds of megabytes.
//
// It does not use mime/multipart: that reader allocates per part, copies
// every byte through its own buffers and cannot rewrite in place. Here one
// fixed 64 KiB buffer per request carries the input, file data goes from it
// straight to the destination (WriteTo), and the output is the input byte
// for byte except where the caller asked for a change.
//
// # Two passes
//
// The gateway must know `model` (to pick the upstream) and, when a
// guardrail judges it, `prompt` before it sends anything, but clients
// put those fields in different places: openai-go sorts fields by name, so
// `file` (audio) and `image[]`/`mask` (image edits) come BEFORE `model`;
// the Python SDK (httpx) writes data fields first and files last; curl
// writes them in command-line order. So:
//
//  1. Prepare(need...) reads parts until every needed field was read, then
//     goes on while the next parts are text fields, and stops at the first
//     file part after that (its headers read, its body not) or at the
//     closing boundary. What it read is held: in memory up to
//     Limits.SpoolMemBytes (256 KiB), beyond that in a temporary file that
//     is unlinked as soon as it is created (so it never outlives the
//     process) and closed by Release. A file that comes before `model` is
//     therefore spooled to disk, never to the heap; a body whose fields come
//     first streams without touching the disk. If a needed field is absent,
//     Prepare reads (and holds) the whole body.
//  2. The caller reads the fields (Value, AppendValues, Part), decides, and
//     edits held fields: Replace (the alias becomes the upstream model
//     name), Remove, Append (added before the closing boundary).
//  3. WriteTo (or Read) produces the output: the held bytes with the edits
//     applied, then the rest of the input as it arrives, parsed on the fly
//     so a malformed tail is still caught (the error comes before the
//     closing boundary is written, so the upstream never receives a
//     complete request and the caller aborts it).
//
// PrepareAll is the first pass that reads and holds the whole body; Rewind
// then lets the output be produced again (a retry or failover to another
// target after the first attempt sent bytes), with new edits.
//
// # Rules
//
//   - The caller's boundary is kept: only field values change, so the
//     upstream Content-Type is the caller's and OutputSize gives the exact
//     Content-Length from the caller's. Preamble, transport padding,
//     part headers and epilogue pass through unchanged.
//   - A part is a file when its Content-Disposition has filename or
//     filename*; otherwise it is a text field, kept in memory (all text
//     values together at most Limits.MaxTextBytes).
//   - Stricter than RFC 2046 where leniency would let two parsers disagree
//     (which is how a prompt gets past a guardrail): the dash-boundary
//     ("--" + boundary) may appear in the body only as a delimiter preceded
//     by CRLF; header lines end in CRLF, without obsolete folding, bare CR
//     or LF or another control character but tab; a part has exactly one Content-Disposition of type
//     form-data with one name; a needed field must be a text field and may
//     occur only once in the whole body; a body needs at least one part.
//   - Limits: MaxBodyBytes (ErrTooLarge, the edge's 413), MaxParts,
//     MaxHeaderBytes per part, MaxTextBytes, padding after a boundary (64).
//   - Errors wrap one of ErrMalformed, ErrTooLarge, ErrRead, ErrWrite,
//     ErrSpool, and never quote body bytes.
//
// A Reader is pooled (Acquire, Release); in steady state a request that
// needs no spill file allocates nothing per part.
package multipart
