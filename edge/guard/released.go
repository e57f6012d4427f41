package guard

import (
	"errors"

	"github.com/VictoriaMetrics/metrics"
)

// ErrReleased is returned by a checker whose guardrail releases content
// when its check does not finish in time (bedrock latency_mode timed):
// the content passes whatever fail_open says, and the engine records the
// bypass BypassTimedRelease on the usage record and in
// gw_guardrail_bypasses_total. Wrap it to add context.
var ErrReleased = errors.New("guard: the check did not finish in time; content released")

// BypassTimedRelease is the bypass reason of ErrReleased.
const BypassTimedRelease = "timed_release"

func init() {
	bypassTotal[BypassTimedRelease] = metrics.NewCounter(`gw_guardrail_bypasses_total{reason="` + BypassTimedRelease + `"}`)
}
