package snapshot

import (
	"strconv"
	"time"

	"gw/admin/resources"
	"gw/sse/rawjson"
)

// EnsemblePlan is the compiled panel and judge of an ensemble model
// (edge/ensemble.go serves it).
type EnsemblePlan struct {
	// Members are the panel in declared order; every request goes to all.
	Members []EnsembleMember
	// Judge is the direct model that synthesises the members' answers.
	Judge *Plan
	// MinResponses members must answer before the judge is asked; resolved
	// by the loader (default min(2, panel), capped at the panel size).
	MinResponses int
	// Timeout bounds each member call and the judge call; 0: none.
	Timeout time.Duration
	// Prompt is the configured synthesis_prompt; empty: the built-in one.
	Prompt string
}

// EnsembleMember is one panel entry with its sampling overrides as JSON
// literals, ready to be written into the member's body (nil: the
// caller's value is kept).
type EnsembleMember struct {
	Plan        *Plan
	Temperature []byte
	Seed        []byte
}

// compileEnsemble resolves an ensemble's members and judge to their plans.
func compileEnsemble(en *resources.Ensemble, byModel map[*resources.Model]*Plan) *EnsemblePlan {
	ep := &EnsemblePlan{
		Judge:        byModel[en.Judge],
		MinResponses: int(en.MinResponses),
		Timeout:      time.Duration(en.TimeoutMS) * time.Millisecond,
		Prompt:       en.SynthesisPrompt,
		Members:      make([]EnsembleMember, 0, len(en.Panel)),
	}
	for _, pm := range en.Panel {
		m := EnsembleMember{Plan: byModel[pm.Model]}
		if pm.Temperature != nil {
			m.Temperature = rawjson.AppendFloat(nil, *pm.Temperature)
		}
		if pm.Seed != nil {
			m.Seed = strconv.AppendInt(nil, *pm.Seed, 10)
		}
		ep.Members = append(ep.Members, m)
	}
	return ep
}

// servableEnsemble: the judge can be served and enough members can to
// reach min_responses.
func servableEnsemble(p *Plan) bool {
	ep := p.Ensemble
	if ep == nil || ep.Judge == nil || !servable(ep.Judge) {
		return false
	}
	n := 0
	for _, m := range ep.Members {
		if m.Plan != nil && servable(m.Plan) {
			n++
		}
	}
	return n >= ep.MinResponses
}
