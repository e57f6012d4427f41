package mcp

import (
	"context"
	"encoding/json"
	"iter"
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

// mergeLists answers a list method with the lists of every reachable
// server (fanOut), concatenated in server order under key. A merged list
// has no cursor; an anonymous struct keeps the SDK result types from
// writing the zero values of newer protocol fields (ttlMs, cacheScope).
func mergeLists[T any](ctx context.Context, c *call, key string, fn func(context.Context, *resources.MCPServer) ([]*T, error)) {
	lists, servers, err := fanOut(ctx, c, fn)
	if err != nil {
		c.upstreamFailed(err)
		return
	}
	merged := []*T{}
	for i := range servers {
		merged = append(merged, lists[i]...)
	}
	c.result(map[string][]*T{key: merged})
}

// collect reads a paginated upstream list, keeping the items keep admits
// (nil: all) renamed by rename (which works on a copy).
func collect[T any](seq iter.Seq2[*T, error], keep func(*T) bool, rename func(*T)) ([]*T, error) {
	var out []*T
	for it, err := range seq {
		if err != nil {
			return nil, err
		}
		if keep != nil && !keep(it) {
			continue
		}
		cp := *it
		rename(&cp)
		out = append(out, &cp)
	}
	return out, nil
}

// capable returns s's upstream session when s is an MCP server whose
// capabilities has admits; nil (and no error) when s has nothing to list.
func (c *call) capable(ctx context.Context, s *resources.MCPServer, has func(*sdk.ServerCapabilities) bool) (*sdk.ClientSession, error) {
	if s.Type != resources.MCPTypeMCP {
		return nil, nil // an OpenAPI document has tools only
	}
	cs, err := c.upstream(ctx, s)
	if err != nil {
		return nil, err
	}
	if has != nil {
		if ir := cs.InitializeResult(); ir == nil || ir.Capabilities == nil || !has(ir.Capabilities) {
			return nil, nil
		}
	}
	return cs, nil
}

func (h *Handler) toolsList(ctx context.Context, c *call) {
	mergeLists(ctx, c, "tools", func(ctx context.Context, s *resources.MCPServer) ([]*sdk.Tool, error) {
		keep := func(t *sdk.Tool) bool { return c.p.toolAllowed(s, t.Name) }
		rename := func(t *sdk.Tool) { t.Name = c.name(s, t.Name) }
		if s.Type == resources.MCPTypeOpenAPI {
			spec, _, err := h.OpenAPI.get(ctx, s)
			if err != nil {
				return nil, err
			}
			return collect(openAPITools(spec), keep, rename)
		}
		cs, err := c.capable(ctx, s, nil)
		if err != nil {
			return nil, err
		}
		return collect(cs.Tools(ctx, nil), keep, rename)
	})
}

// openAPITools iterates over a document's tools like an upstream list.
func openAPITools(spec *OpenAPISpec) iter.Seq2[*sdk.Tool, error] {
	return func(yield func(*sdk.Tool, error) bool) {
		for _, t := range spec.Tools {
			if !yield(t.Tool, nil) {
				return
			}
		}
	}
}

func (h *Handler) promptsList(ctx context.Context, c *call) {
	mergeLists(ctx, c, "prompts", func(ctx context.Context, s *resources.MCPServer) ([]*sdk.Prompt, error) {
		cs, err := c.capable(ctx, s, func(sc *sdk.ServerCapabilities) bool { return sc.Prompts != nil })
		if cs == nil {
			return nil, err
		}
		return collect(cs.Prompts(ctx, nil), nil, func(p *sdk.Prompt) { p.Name = c.name(s, p.Name) })
	})
}

func (h *Handler) promptsGet(ctx context.Context, c *call) {
	var p sdk.GetPromptParams
	if err := json.Unmarshal(c.req.Params, &p); err != nil {
		c.rpcError(jsonrpc.CodeInvalidParams, "cannot read prompts/get params: "+err.Error())
		return
	}
	s, name, ok := c.owner(p.Name)
	if !ok || s.Type != resources.MCPTypeMCP {
		c.rpcError(jsonrpc.CodeInvalidParams, "unknown prompt \""+p.Name+"\"")
		return
	}
	ctx, cancel, cs := c.open(ctx, s)
	defer cancel()
	if cs == nil {
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
	mergeLists(ctx, c, "resources", func(ctx context.Context, s *resources.MCPServer) ([]*sdk.Resource, error) {
		cs, err := c.capable(ctx, s, hasResources)
		if cs == nil {
			return nil, err
		}
		return collect(cs.Resources(ctx, nil), nil, func(r *sdk.Resource) { r.Name, r.URI = c.name(s, r.Name), c.name(s, r.URI) })
	})
}

func (h *Handler) templatesList(ctx context.Context, c *call) {
	mergeLists(ctx, c, "resourceTemplates", func(ctx context.Context, s *resources.MCPServer) ([]*sdk.ResourceTemplate, error) {
		cs, err := c.capable(ctx, s, hasResources)
		if cs == nil {
			return nil, err
		}
		return collect(cs.ResourceTemplates(ctx, nil), nil, func(r *sdk.ResourceTemplate) {
			r.Name, r.URITemplate = c.name(s, r.Name), c.name(s, r.URITemplate)
		})
	})
}

func hasResources(sc *sdk.ServerCapabilities) bool { return sc.Resources != nil }

func (h *Handler) resourcesRead(ctx context.Context, c *call) {
	var p sdk.ReadResourceParams
	if err := json.Unmarshal(c.req.Params, &p); err != nil {
		c.rpcError(jsonrpc.CodeInvalidParams, "cannot read resources/read params: "+err.Error())
		return
	}
	caller := p.URI
	s, uri, ok := c.owner(p.URI)
	if !ok || s.Type != resources.MCPTypeMCP {
		c.rpcError(jsonrpc.CodeInvalidParams, "unknown resource \""+p.URI+"\"")
		return
	}
	ctx, cancel, cs := c.open(ctx, s)
	defer cancel()
	if cs == nil {
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

// setLevel forwards logging/setLevel to every reachable server that logs
// (on /mcp) or to the one server, and keeps the level for upstream
// sessions opened later: without it SDK servers send no log messages.
func (h *Handler) setLevel(ctx context.Context, c *call) {
	var p sdk.SetLoggingLevelParams
	if err := json.Unmarshal(c.req.Params, &p); err != nil || p.Level == "" {
		c.rpcError(jsonrpc.CodeInvalidParams, "logging/setLevel needs params.level")
		return
	}
	c.sess.mu.Lock()
	c.sess.logLevel = p.Level
	c.sess.mu.Unlock()
	_, _, err := fanOut(ctx, c, func(ctx context.Context, s *resources.MCPServer) (struct{}, error) {
		cs, err := c.capable(ctx, s, func(sc *sdk.ServerCapabilities) bool { return sc.Logging != nil })
		if cs == nil {
			return struct{}{}, err
		}
		return struct{}{}, cs.SetLoggingLevel(ctx, &p)
	})
	if err != nil {
		c.upstreamFailed(err)
		return
	}
	c.result(struct{}{})
}
