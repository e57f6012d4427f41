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
	plugin.AuthBase
	header, query []byte
	hide          bool
	keys          map[string]*admingw.Consumer
}

// New compiles a key-auth configuration.
func New(raw json.RawMessage, env *plugin.Env, owner string) (plugin.Plugin, error) {
	c := conf{Header: "apikey", Query: "apikey"}
	if err := json.Unmarshal(raw, &c); err != nil {
		return nil, fmt.Errorf("cannot decode: %w", err)
	}
	keys, err := plugin.CredentialIndex(env, Name, func(_ string, con *admingw.Consumer, _ json.RawMessage) (*admingw.Consumer, bool) {
		return con, true
	})
	if err != nil {
		return nil, err
	}
	p := &keyAuth{header: []byte(c.Header), query: []byte(c.Query), hide: c.HideCredentials, keys: keys}
	if err := p.SetAnonymous(env, c.Anonymous); err != nil {
		return nil, err
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
		return p.Fail(c, bodyMissing)
	}
	con := p.keys[string(key)]
	if con == nil {
		return p.Fail(c, bodyInvalid)
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
