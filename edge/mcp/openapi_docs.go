package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"gw/admin/resources"
	"gw/admin/snapshot"
)

// OpenAPIDocs holds the converted documents of type openapi servers, by
// server entry (a reload makes new entries, so a changed document is read
// again). Prepare, run at config apply, loads every document so a bad one
// fails the load; the handler reads them with get.
//
// A spec_url that cannot be fetched at apply (network error, non-2xx) does
// not fail the load: the server serves no tools, its calls answer 502 with
// the fetch error, and the fetch is retried on use at most every
// openAPIRetry. A document that is fetched but is not a usable OpenAPI
// document fails the load like an inline one.
type OpenAPIDocs struct {
	// Transport carries spec_url fetches; nil: http.DefaultTransport.
	Transport http.RoundTripper
	// Holder, when set, lets Prepare forget the documents of servers that
	// are neither in the new snapshot nor in the serving one.
	Holder *snapshot.Holder
	Logger *slog.Logger

	mu sync.Mutex
	m  map[*resources.MCPServer]*openapiEntry
}

// openAPIRetry is how long a failed spec_url fetch is remembered.
const openAPIRetry = 30 * time.Second

type openapiEntry struct {
	mu   sync.Mutex
	spec *OpenAPISpec
	base string
	err  error
	at   time.Time
}

// docError is a document that is not usable: a config error of the entry.
type docError struct {
	field string
	err   error
}

func (e *docError) Error() string { return e.field + ": " + e.err.Error() }

// Prepare loads the document of every type openapi server of s. It is a
// snapshot.Options.Prepare hook.
func (d *OpenAPIDocs) Prepare(s *snapshot.Snapshot) error {
	var errs []resources.Error
	keep := map[*resources.MCPServer]bool{}
	for _, srv := range s.Resources.MCPServers {
		keep[srv] = true
		if srv.Type != resources.MCPTypeOpenAPI {
			continue
		}
		e := d.entry(srv)
		e.mu.Lock()
		err := d.load(context.Background(), srv, e)
		e.mu.Unlock()
		var de *docError
		switch {
		case errors.As(err, &de):
			errs = append(errs, resources.Error{Collection: resources.CollMCPServers, Index: srv.Index, IDField: srv.IDField, ID: srv.Name, Path: de.field, Msg: de.err.Error()})
		case err != nil && d.Logger != nil:
			d.Logger.Warn("mcp openapi server: spec_url could not be fetched; the server serves no tools until it can", "server", srv.Name, "error", err.Error())
		}
	}
	if len(errs) > 0 {
		return &resources.LoadError{Errors: errs}
	}
	if d.Holder != nil {
		if cur := d.Holder.Load(); cur != nil {
			for _, srv := range cur.Resources.MCPServers {
				keep[srv] = true
			}
		}
		d.mu.Lock()
		for srv := range d.m {
			if !keep[srv] {
				delete(d.m, srv)
			}
		}
		d.mu.Unlock()
	}
	return nil
}

func (d *OpenAPIDocs) entry(srv *resources.MCPServer) *openapiEntry {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.m == nil {
		d.m = make(map[*resources.MCPServer]*openapiEntry)
	}
	e := d.m[srv]
	if e == nil {
		e = &openapiEntry{}
		d.m[srv] = e
	}
	return e
}

// get returns srv's converted document and base URL, loading it when it
// was not (or fetching it again when the last fetch failed long enough ago).
func (d *OpenAPIDocs) get(ctx context.Context, srv *resources.MCPServer) (*OpenAPISpec, string, error) {
	e := d.entry(srv)
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.spec == nil && (e.at.IsZero() || time.Since(e.at) > openAPIRetry) {
		d.load(ctx, srv, e)
	}
	if e.spec == nil {
		return nil, "", e.err
	}
	return e.spec, e.base, nil
}

// load reads, converts and remembers srv's document; e.mu is held.
func (d *OpenAPIDocs) load(ctx context.Context, srv *resources.MCPServer, e *openapiEntry) error {
	e.at = time.Now()
	doc, field := []byte(srv.Spec), "spec"
	if srv.SpecURL != "" {
		field = "spec_url"
		var err error
		if doc, err = d.fetch(ctx, srv); err != nil {
			e.spec, e.err = nil, err
			return err
		}
	}
	spec, err := ParseOpenAPI(doc)
	if err != nil {
		e.spec, e.err = nil, &docError{field: field, err: err}
		return e.err
	}
	base, err := resolveBase(srv.URL, srv.SpecURL, spec)
	if err != nil {
		e.spec, e.err = nil, &docError{field: "url", err: err}
		return e.err
	}
	e.spec, e.base, e.err = spec, base, nil
	return nil
}

func (d *OpenAPIDocs) transport() http.RoundTripper {
	if d.Transport != nil {
		return d.Transport
	}
	return http.DefaultTransport
}

// fetch GETs spec_url with the server's headers and credential.
func (d *OpenAPIDocs) fetch(ctx context.Context, srv *resources.MCPServer) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, srv.Timeout())
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.SpecURL, nil)
	if err != nil {
		return nil, errors.New("cannot fetch the OpenAPI document: " + err.Error())
	}
	req.Header.Set("Accept", "application/json, application/yaml;q=0.9, */*;q=0.5")
	hc := &http.Client{Transport: &headerTransport{base: d.transport(), srv: srv}}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, errors.New("cannot fetch the OpenAPI document from spec_url: " + err.Error())
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return nil, errors.New("cannot fetch the OpenAPI document from spec_url: HTTP " + strconv.Itoa(resp.StatusCode))
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, MaxOpenAPIDocBytes+1))
	if err != nil {
		return nil, errors.New("cannot read the OpenAPI document from spec_url: " + err.Error())
	}
	return b, nil
}

// maxOpenAPIResponse bounds the response body a tool call returns.
const maxOpenAPIResponse = MaxMessageBytes

// callOpenAPI makes the HTTP call of tool t with args and answers it as a
// tool result: the response body as text, isError for a non-2xx status.
// An error is a transport failure (answered 502).
func (h *Handler) callOpenAPI(ctx context.Context, srv *resources.MCPServer, base string, t *OpenAPITool, args any) (*sdk.CallToolResult, error) {
	am, _ := args.(map[string]any)
	if args != nil && am == nil {
		return toolError("the arguments must be a JSON object"), nil
	}
	u, err := t.requestURL(base, am)
	if err != nil {
		return toolError(err.Error()), nil
	}
	var body io.Reader
	if t.BodyArg != "" {
		if v, ok := am[t.BodyArg]; ok {
			b, err := json.Marshal(v)
			if err != nil {
				return toolError("cannot encode the request body: " + err.Error()), nil
			}
			body = bytes.NewReader(b)
		} else if t.BodyRequired {
			return toolError("argument " + t.BodyArg + " is required"), nil
		}
	}
	req, err := http.NewRequestWithContext(ctx, t.Method, u, body)
	if err != nil {
		return nil, errors.New("cannot build the request: " + err.Error())
	}
	if body != nil {
		req.Header.Set("Content-Type", t.BodyType)
	}
	req.Header.Set("Accept", "application/json, */*;q=0.5")
	for _, p := range t.Params {
		v, ok := am[p.Arg]
		if !ok || v == nil {
			continue
		}
		switch p.In {
		case "header":
			req.Header.Set(p.Name, joinValue(v, ","))
		case "cookie":
			req.AddCookie(&http.Cookie{Name: p.Name, Value: joinValue(v, ","), Quoted: false})
		}
	}
	hc := &http.Client{Transport: &headerTransport{base: h.transport(), srv: srv}}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, errors.New("cannot call " + t.Method + " " + t.Path + ": " + err.Error())
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxOpenAPIResponse+1))
	if err != nil {
		return nil, errors.New("cannot read the answer of " + t.Method + " " + t.Path + ": " + err.Error())
	}
	if len(b) > maxOpenAPIResponse {
		return toolError("the API answered more than 4 MiB; the answer is not relayed"), nil
	}
	if resp.StatusCode/100 != 2 {
		// The status leads the text so the model sees why the call failed.
		return toolError("HTTP " + strconv.Itoa(resp.StatusCode) + "\n\n" + string(b)), nil
	}
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: string(b)}}}, nil
}

func toolError(msg string) *sdk.CallToolResult {
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: msg}}, IsError: true}
}
