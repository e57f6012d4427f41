package edge

import (
	"sync"
	"time"

	"github.com/VictoriaMetrics/metrics"

	"gw/edge/guard"
)

// UsageQueueSize is the bounded queue between the proxy and the usage
// sinks (spec: 16384). The request never waits for telemetry: when the queue
// is full the event is dropped and counted.
const UsageQueueSize = 16384

// Attempt kinds of usage events.
const (
	AttemptFailed = "failed_attempt" // a failed upstream attempt that was retried or failed over
	AttemptFinal  = "final"          // the request's last attempt (or a request answered by gw itself)
)

// UsageEvent is one usage record. Failed attempts carry zero tokens and are
// not billed; the final record of a request is its last attempt's.
type UsageEvent struct {
	OccurredAt       time.Time
	APIKeyID         string
	APIKeyName       string
	TeamID           string
	UserID           string
	Model            string // caller-facing alias
	TargetModel      string // direct model that served the attempt
	ProviderKey      string
	StatusCode       int
	AttemptKind      string
	Attempt          int // 1-based attempt number
	Stream           bool
	InboundProtocol  string // chat_completions
	Operation        string // chat.completions
	PromptTokens     int64
	CompletionTokens int64
	ReasoningTokens  int64
	CachedTokens     int64
	TotalTokens      int64 // 0 when the upstream reported none
	CostUSD          float64
	ErrorClass       string
	ErrorMessage     string
	Latency          time.Duration

	// Guardrail outcome (spec "Events"); empty when no guardrail applied.
	// The slices are the event's own (copied from the request's state).
	AppliedGuardrails          []string    `json:"applied_guardrails,omitempty"`
	GuardrailEnforcedHits      []guard.Hit `json:"guardrail_enforced_hits,omitempty"`
	GuardrailMonitorHits       []guard.Hit `json:"guardrail_monitor_hits,omitempty"`
	GuardrailBypassedReason    string      `json:"guardrail_bypassed_reason,omitempty"`
	GuardrailBlockedFailClosed bool        `json:"guardrail_blocked_fail_closed,omitempty"`
}

// UsageSink receives batches of events from the stream's goroutine. A batch
// is only valid during the call.
type UsageSink interface {
	ConsumeUsage(batch []UsageEvent)
}

// UsageStream is the bounded in-process usage-event queue.
type UsageStream struct {
	ch    chan UsageEvent
	mu    sync.Mutex
	sinks []UsageSink
	done  chan struct{}
	once  sync.Once
}

var (
	usageDropsQueueFull = metrics.NewCounter(`gw_usage_event_drops_total{reason="queue_full"}`)
	usageEmittedOK      = metrics.NewCounter(`gw_usage_events_emitted_total{status="ok"}`)
	usageEmittedErr     = metrics.NewCounter(`gw_usage_events_emitted_total{status="error"}`)
)

// NewUsageStream starts the drain goroutine.
func NewUsageStream() *UsageStream {
	u := &UsageStream{ch: make(chan UsageEvent, UsageQueueSize), done: make(chan struct{})}
	go u.run()
	return u
}

// AddSink registers a sink; events emitted afterwards reach it.
func (u *UsageStream) AddSink(s UsageSink) {
	u.mu.Lock()
	u.sinks = append(u.sinks, s)
	u.mu.Unlock()
}

// Emit queues ev without blocking.
func (u *UsageStream) Emit(ev UsageEvent) {
	select {
	case u.ch <- ev:
		if ev.StatusCode < 400 {
			usageEmittedOK.Inc()
		} else {
			usageEmittedErr.Inc()
		}
	default:
		usageDropsQueueFull.Inc()
	}
}

// Close drains queued events and stops the stream.
func (u *UsageStream) Close() {
	u.once.Do(func() { close(u.ch) })
	<-u.done
}

func (u *UsageStream) run() {
	defer close(u.done)
	batch := make([]UsageEvent, 0, 256)
	for ev := range u.ch {
		batch = append(batch[:0], ev)
	drain:
		for len(batch) < cap(batch) {
			select {
			case more, ok := <-u.ch:
				if !ok {
					break drain
				}
				batch = append(batch, more)
			default:
				break drain
			}
		}
		u.mu.Lock()
		sinks := u.sinks
		u.mu.Unlock()
		for _, s := range sinks {
			s.ConsumeUsage(batch)
		}
	}
}
