package openai

import (
	"net/url"
	"strings"

	"gw/adapters"
)

var _ adapters.Realtime = (*Adapter)(nil)

// RealtimeTarget returns the Realtime session of upstreamModel on the key's
// endpoint: api_base + /realtime?model=<model> (the base's own query kept),
// http(s) turned into ws(s), with `Authorization: Bearer <api_key>` unless
// api_base carries user-info (then Basic from the user-info, as on chat).
// Azure keys are not served in this build (adapters.ErrUnsupported): their
// Realtime surface uses deployments and api-versions of its own.
func (a *Adapter) RealtimeTarget(upstreamModel string) (adapters.RealtimeTarget, error) {
	if a.azure || a.base == "" {
		return adapters.RealtimeTarget{}, adapters.ErrUnsupported
	}
	pre, query, err := adapters.SplitBase(a.base)
	if err != nil {
		return adapters.RealtimeTarget{}, err
	}
	switch {
	case strings.HasPrefix(pre, "https://"):
		pre = "wss://" + pre[len("https://"):]
	case strings.HasPrefix(pre, "http://"):
		pre = "ws://" + pre[len("http://"):]
	}
	q := "model=" + url.QueryEscape(upstreamModel)
	if query != "" {
		q = query + "&" + q
	}
	t := adapters.RealtimeTarget{URL: pre + "/realtime?" + q, Forward: a.rules.Forward}
	if u, err := url.Parse(a.base); err == nil && u.User == nil && a.key.IsSet() {
		t.AuthHeader, t.AuthValue = "Authorization", "Bearer "+a.key.Reveal()
	}
	return t, nil
}
