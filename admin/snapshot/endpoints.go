package snapshot

import (
	"errors"
	"strconv"

	"gw/adapters"
	"gw/admin/resources"
)

// compileEndpoints sets Plan.Endpoints, the caller endpoints beyond chat
// each alias serves (adapters.Endpoint): a direct model serves what its
// provider key's adapter builds, /v1/embeddings only with an `embedding`
// block; a routing group serves only what every one of its targets
// serves, since any target may be picked for any request. A group that
// mixes embedding and other models is a load error: each target must
// support the endpoint the group serves (spec, caller-facing proxy).
func compileEndpoints(plans []*Plan) error {
	for _, p := range plans {
		if p.Kind != resources.KindDirect || p.Upstream == nil || p.Upstream.Adapter == nil {
			continue
		}
		c := p.Upstream.Caps
		if p.Model.Embedding == nil {
			c = c.Without(adapters.EndpointEmbeddings)
		} else {
			// An embedding model answers embeddings only.
			c &= adapters.Caps(0).With(adapters.EndpointEmbeddings)
		}
		p.Endpoints = c
	}
	for _, p := range plans {
		if p.Kind != resources.KindRouting || len(p.Targets) == 0 {
			continue
		}
		first := p.Targets[0].Plan.Model
		c := ^adapters.Caps(0)
		for i, t := range p.Targets {
			if (t.Plan.Model.Embedding == nil) != (first.Embedding == nil) {
				return errors.New("models[" + strconv.Itoa(p.Index) + "] (display_name=" + p.Alias + "): routing.targets[" + strconv.Itoa(i) +
					"].model: \"" + t.Plan.Alias + "\" and \"" + first.DisplayName + "\" serve different endpoints (one has an embedding block): every target of a group must serve the endpoints the group serves")
			}
			c &= t.Plan.Endpoints
		}
		p.Endpoints = c
	}
	return nil
}
