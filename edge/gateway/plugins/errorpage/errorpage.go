// Package errorpage is the error-page plugin: the gateway's own 404, 500,
// 502 and 503 answers (no route, upstream failures, a route that cannot be
// served) are replaced by the pages of the plugin metadata (`error_404`
// ...: `body`, `content_type`) while `enable` is true. Upstream answers
// are never changed.
package errorpage

import (
	"encoding/json"
	"fmt"

	"gw/edge/gateway/plugin"
)

// Name of the plugin; Priority runs its header filter after the other
// response plugins have seen the gateway's status.
const (
	Name     = "error-page"
	Priority = 3
)

func init() {
	plugin.Register(&plugin.Def{Name: Name, Priority: Priority, New: New})
}

type page struct {
	Body        *string `json:"body"`
	ContentType string  `json:"content_type"`
}

type compiled struct {
	set         bool
	body, ctype []byte
}

type errorPage struct {
	plugin.Base
	pages [4]compiled // 404, 500, 502, 503
}

// New compiles the route's (empty) configuration with the current plugin
// metadata; a metadata change recompiles every route, as any write does.
func New(raw json.RawMessage, env *plugin.Env, owner string) (plugin.Plugin, error) {
	p := &errorPage{}
	md := env.Metadata(Name)
	if len(md) == 0 {
		return p, nil
	}
	var m struct {
		Enable bool  `json:"enable"`
		E404   *page `json:"error_404"`
		E500   *page `json:"error_500"`
		E502   *page `json:"error_502"`
		E503   *page `json:"error_503"`
	}
	if err := json.Unmarshal(md, &m); err != nil {
		return nil, fmt.Errorf("cannot decode plugin metadata: %w", err)
	}
	if !m.Enable {
		return p, nil
	}
	for i, pg := range []*page{m.E404, m.E500, m.E502, m.E503} {
		if pg == nil || pg.Body == nil {
			continue
		}
		ct := pg.ContentType
		if ct == "" {
			ct = "text/html"
		}
		p.pages[i] = compiled{set: true, body: []byte(*pg.Body), ctype: []byte(ct)}
	}
	return p, nil
}

func (p *errorPage) Phases() plugin.Phase { return plugin.HeaderFilter }

func (p *errorPage) HeaderFilter(c *plugin.Ctx) {
	if !c.Generated {
		return
	}
	var i int
	switch c.R.Response.StatusCode() {
	case 404:
		i = 0
	case 500:
		i = 1
	case 502:
		i = 2
	case 503:
		i = 3
	default:
		return
	}
	pg := &p.pages[i]
	if !pg.set {
		return
	}
	c.R.Response.Header.SetContentTypeBytes(pg.ctype)
	c.R.Response.SetBodyRaw(pg.body)
}
