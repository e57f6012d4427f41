// Package keyauth is the key-auth plugin: a consumer is identified by the
// key it sends in a header (default `apikey`) or query argument (default
// `apikey`), matched against the key-auth credentials of consumers.
package keyauth

import (
	"encoding/json"
	"fmt"

	admingw "gw/admin/gateway"
	"gw/edge/gateway/plugin"
)

// Name and Priority are APISIX's.
const (
	Name     = "key-auth"
	Priority = 2500
)

func init() {
	plugin.Register(&plugin.Def{Name: Name, Priority: Priority, Auth: true, New: New})
}

var (
	bodyMissing = plugin.ErrorBody("Missing API key in request")
	bodyInvalid = plugin.ErrorBody("Invalid API key in request")
)

type conf struct {
	Header          string `json:"header"`
	Query           string `json:"query"`
	HideCredentials bool   `json:"hide_credentials"`
	Anonymous       string `json:"anonymous_consumer"`
}

type keyAuth struct {
	plugin.Base
	header, query []byte
	hide          bool
	keys          map[string]*admingw.Consumer
	anonymous     *admingw.Consumer
}

// New compiles a key-auth configuration.
func New(raw json.RawMessage, env *plugin.Env, owner string) (plugin.Plugin, error) {
	c := conf{Header: "apikey", Query: "apikey"}
	if err := json.Unmarshal(raw, &c); err != nil {
		return nil, fmt.Errorf("cannot decode: %w", err)
	}
	p := &keyAuth{header: []byte(c.Header), query: []byte(c.Query), hide: c.HideCredentials, keys: env.Snap.Auth[Name]}
	if c.Anonymous != "" {
		if p.anonymous = env.Snap.Consumers[c.Anonymous]; p.anonymous == nil {
			return nil, fmt.Errorf("anonymous_consumer %q not found", c.Anonymous)
		}
	}
	return p, nil
}

func (p *keyAuth) Phases() plugin.Phase { return plugin.Rewrite }

func (p *keyAuth) Rewrite(c *plugin.Ctx) bool {
	req := &c.R.Request
	key := req.Header.PeekBytes(p.header)
	fromQuery := false
	if len(key) == 0 {
		key = c.R.QueryArgs().PeekBytes(p.query)
		fromQuery = len(key) > 0
	}
	if len(key) == 0 {
		if p.anonymous != nil {
			c.SetConsumer(p.anonymous)
			return true
		}
		c.Reply(401, bodyMissing)
		return false
	}
	con := p.keys[string(key)]
	if con == nil {
		if p.anonymous != nil {
			c.SetConsumer(p.anonymous)
			return true
		}
		c.Reply(401, bodyInvalid)
		return false
	}
	c.SetConsumer(con)
	if p.hide {
		if fromQuery {
			c.R.QueryArgs().DelBytes(p.query)
			c.R.URI().SetQueryStringBytes(c.R.QueryArgs().AppendBytes(c.Buf[:0]))
		} else {
			req.Header.DelBytes(p.header)
		}
	}
	return true
}
