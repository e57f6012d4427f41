// Package limiter holds fixed-window request and token counters and
// concurrency semaphores, with a lock-free local store and a shared Redis
// store. It imports nothing from edge, admin or adapters.
//
// Limits are validated and compiled today; enforcement lands with the
// rate-limit work (see docs/ARCHITECTURE.md).
package limiter
