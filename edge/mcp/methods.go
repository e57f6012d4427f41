package mcp

import (
	"context"
	"encoding/json"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"gw/admin/resources"
)

// fanOut runs fn for every reachable server at once and returns the
// per-server outcomes in server order. On /mcp a server that fails is left
// out of a list (its error is logged); on /mcp/{server} its error answers.
func fanOut[T any](ctx context.Context, c *call, fn func(context.Context, *resources.MCPServer) (T, error)) ([]T, []*resources.MCPServer, error) {
	servers := c.servers()
	out := make([]T, len(servers))
	errs := make([]error, len(servers))
	var wg sync.WaitGroup
	for i, s := range servers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sctx, cancel := context.WithTimeout(ctx, s.Timeout())
			defer cancel()
			out[i], errs[i] = fn(sctx, s)
		}()
	}
	wg.Wait()
	if c.srv != nil && len(errs) == 1 && errs[0] != nil {
		return nil, nil, errs[0]
	}
	for i, err := range errs {
		if err != nil && c.h.Logger != nil {
			c.h.Logger.Warn("mcp list: server left out", "server", servers[i].Name, "method", c.req.Method, "error", err.Error())
		}
	}
	return out, servers, nil
}

func (h *Handler) toolsList(ctx context.Context, c *call) {
	lists, servers, err := fanOut(ctx, c, func(ctx context.Context, s *resources.MCPServer) ([]*sdk.Tool, error) {
		cs, err := c.upstream(ctx, s)
		if err != nil {
			return nil, err
		}
		var tools []*sdk.Tool
		for t, err := range cs.Tools(ctx, nil) {
			if err != nil {
				return nil, err
			}
			if c.p.toolAllowed(s, t.Name) {
				cp := *t
				cp.Name = c.name(s, t.Name)
				tools = append(tools, &cp)
			}
		}
		return tools, nil
	})
	if err != nil {
		c.upstreamFailed(err)
		return
	}
	// A merged list has no cursor; the SDK result type would also write the
	// zero values of newer protocol fields (ttlMs, cacheScope).
	tools := []*sdk.Tool{}
	for i := range servers {
		tools = append(tools, lists[i]...)
	}
	c.result(struct {
		Tools []*sdk.Tool `json:"tools"`
	}{tools})
}

func (h *Handler) promptsList(ctx context.Context, c *call) {
	lists, servers, err := fanOut(ctx, c, func(ctx context.Context, s *resources.MCPServer) ([]*sdk.Prompt, error) {
		cs, err := c.upstream(ctx, s)
		if err != nil {
			return nil, err
		}
		if ir := cs.InitializeResult(); ir == nil || ir.Capabilities == nil || ir.Capabilities.Prompts == nil {
			return nil, nil
		}
		var out []*sdk.Prompt
		for p, err := range cs.Prompts(ctx, nil) {
			if err != nil {
				return nil, err
			}
			cp := *p
			cp.Name = c.name(s, p.Name)
			out = append(out, &cp)
		}
		return out, nil
	})
	if err != nil {
		c.upstreamFailed(err)
		return
	}
	prompts := []*sdk.Prompt{}
	for i := range servers {
		prompts = append(prompts, lists[i]...)
	}
	c.result(struct {
		Prompts []*sdk.Prompt `json:"prompts"`
	}{prompts})
}

func (h *Handler) promptsGet(ctx context.Context, c *call) {
	var p sdk.GetPromptParams
	if err := json.Unmarshal(c.req.Params, &p); err != nil {
		c.rpcError(jsonrpc.CodeInvalidParams, "cannot read prompts/get params: "+err.Error())
		return
	}
	s, name, ok := c.owner(p.Name)
	if !ok {
		c.rpcError(jsonrpc.CodeInvalidParams, "unknown prompt \""+p.Name+"\"")
		return
	}
	ctx, cancel := context.WithTimeout(ctx, s.Timeout())
	defer cancel()
	cs, err := c.upstream(ctx, s)
	if err != nil {
		c.upstreamFailed(err)
		return
	}
	p.Name = name
	res, err := cs.GetPrompt(ctx, &p)
	if err != nil {
		c.upstreamFailed(err)
		return
	}
	c.result(res)
}

// Resources on /mcp: a resource's name and uri are both prefixed
// <server>__, so resources/read finds the owner without any state; the
// upstream sees its own uri.
func (h *Handler) resourcesList(ctx context.Context, c *call) {
	lists, servers, err := fanOut(ctx, c, func(ctx context.Context, s *resources.MCPServer) ([]*sdk.Resource, error) {
		cs, err := c.upstream(ctx, s)
		if err != nil {
			return nil, err
		}
		if ir := cs.InitializeResult(); ir == nil || ir.Capabilities == nil || ir.Capabilities.Resources == nil {
			return nil, nil
		}
		var out []*sdk.Resource
		for r, err := range cs.Resources(ctx, nil) {
			if err != nil {
				return nil, err
			}
			cp := *r
			cp.Name, cp.URI = c.name(s, r.Name), c.name(s, r.URI)
			out = append(out, &cp)
		}
		return out, nil
	})
	if err != nil {
		c.upstreamFailed(err)
		return
	}
	list := []*sdk.Resource{}
	for i := range servers {
		list = append(list, lists[i]...)
	}
	c.result(struct {
		Resources []*sdk.Resource `json:"resources"`
	}{list})
}

func (h *Handler) templatesList(ctx context.Context, c *call) {
	lists, servers, err := fanOut(ctx, c, func(ctx context.Context, s *resources.MCPServer) ([]*sdk.ResourceTemplate, error) {
		cs, err := c.upstream(ctx, s)
		if err != nil {
			return nil, err
		}
		if ir := cs.InitializeResult(); ir == nil || ir.Capabilities == nil || ir.Capabilities.Resources == nil {
			return nil, nil
		}
		var out []*sdk.ResourceTemplate
		for r, err := range cs.ResourceTemplates(ctx, nil) {
			if err != nil {
				return nil, err
			}
			cp := *r
			cp.Name, cp.URITemplate = c.name(s, r.Name), c.name(s, r.URITemplate)
			out = append(out, &cp)
		}
		return out, nil
	})
	if err != nil {
		c.upstreamFailed(err)
		return
	}
	list := []*sdk.ResourceTemplate{}
	for i := range servers {
		list = append(list, lists[i]...)
	}
	c.result(struct {
		ResourceTemplates []*sdk.ResourceTemplate `json:"resourceTemplates"`
	}{list})
}

func (h *Handler) resourcesRead(ctx context.Context, c *call) {
	var p sdk.ReadResourceParams
	if err := json.Unmarshal(c.req.Params, &p); err != nil {
		c.rpcError(jsonrpc.CodeInvalidParams, "cannot read resources/read params: "+err.Error())
		return
	}
	caller := p.URI
	s, uri, ok := c.owner(p.URI)
	if !ok {
		c.rpcError(jsonrpc.CodeInvalidParams, "unknown resource \""+p.URI+"\"")
		return
	}
	ctx, cancel := context.WithTimeout(ctx, s.Timeout())
	defer cancel()
	cs, err := c.upstream(ctx, s)
	if err != nil {
		c.upstreamFailed(err)
		return
	}
	p.URI = uri
	res, err := cs.ReadResource(ctx, &p)
	if err != nil {
		c.upstreamFailed(err)
		return
	}
	if c.srv == nil {
		for _, rc := range res.Contents {
			if rc != nil && rc.URI == uri {
				rc.URI = caller
			} else if rc != nil {
				rc.URI = c.name(s, rc.URI)
			}
		}
	}
	c.result(res)
}
