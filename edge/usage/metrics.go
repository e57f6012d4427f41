package usage

import (
	"github.com/VictoriaMetrics/metrics"

	"gw/admin"
)

// Token and cost counters by caller key and alias, updated on the
// dispatcher goroutine (never on the request path). Their label values are
// the operator's own key and model names, so cardinality is bounded by
// the resource file.
type spendKey struct{ model, key string }

type spendCounters struct {
	prompt, completion, reasoning, cached *metrics.Counter
	cost                                  *metrics.FloatCounter
}

type spendMetrics map[spendKey]*spendCounters

func (m spendMetrics) add(r *Record) {
	if r.PromptTokens == 0 && r.CompletionTokens == 0 && r.CostUSD == 0 {
		return
	}
	k := spendKey{r.Model, r.APIKeyName}
	c := m[k]
	if c == nil {
		labels := `model="` + admin.EscapeLabelValue(r.Model) + `",api_key="` + admin.EscapeLabelValue(r.APIKeyName) + `"`
		tok := func(typ string) *metrics.Counter {
			return metrics.GetOrCreateCounter(`gw_usage_tokens_total{` + labels + `,type="` + typ + `"}`)
		}
		c = &spendCounters{prompt: tok("prompt"), completion: tok("completion"), reasoning: tok("reasoning"), cached: tok("cached_prompt"),
			cost: metrics.GetOrCreateFloatCounter(`gw_usage_cost_usd_total{` + labels + `}`)}
		m[k] = c
	}
	c.prompt.Add(int(r.PromptTokens))
	c.completion.Add(int(r.CompletionTokens))
	c.reasoning.Add(int(r.ReasoningTokens))
	c.cached.Add(int(r.CachedPromptTokens))
	c.cost.Add(r.CostUSD)
}
