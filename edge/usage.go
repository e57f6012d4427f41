package edge

import (
	"time"

	"gw/edge/usage"
)

// The usage record and its pipeline live in edge/usage; these names keep
// the proxy's side short.

// UsageQueueSize is the bounded queue between the proxy and the usage
// sinks (spec: 16384).
const UsageQueueSize = usage.QueueSize

// Attempt kinds of usage events.
const (
	AttemptFailed = usage.AttemptFailed
	AttemptFinal  = usage.AttemptFinal
)

// UsageEvent is one usage record.
type UsageEvent = usage.Record

// UsageStream is the usage-event pipeline the proxy emits into.
type UsageStream = usage.Pipeline

// NewUsageStream starts a pipeline with no sinks.
func NewUsageStream() *UsageStream { return usage.New(usage.Options{}) }

// usageGrace bounds the final flush of streams closed by tests.
const usageGrace = 5 * time.Second
