package openai

import (
	"strings"

	"github.com/valyala/fasthttp"

	"gw/adapters"
	"gw/sse/rawjson"
)

// The caller endpoints beyond chat (adapters.Endpoint) on the openai family:
// the caller's body goes upstream unchanged but for `model` (and, on a
// completions stream the caller did not ask usage for, the
// stream_options.include_usage gw needs for its usage record), POSTed to
// api_base + the endpoint's path with the key's credential and header
// rules. Chat-only body rules (param_renames, temperature bounds,
// default_body_fields, developer role) do not apply to other bodies.

// Interface guards.
var (
	_ adapters.EmbeddingsBuilder  = (*Adapter)(nil)
	_ adapters.CompletionsBuilder = (*Adapter)(nil)
	_ adapters.RerankBuilder      = (*Adapter)(nil)
	_ adapters.ImagesBuilder      = (*Adapter)(nil)
	_ adapters.SpeechBuilder      = (*Adapter)(nil)
	_ adapters.VideosBuilder      = (*Adapter)(nil)
	_ adapters.UploadBuilder      = (*Adapter)(nil)
	_ adapters.Capable            = (*Adapter)(nil)
)

// endpointPaths are appended to api_base (or placed after the deployment
// on Azure's dated surface).
var endpointPaths = [adapters.NumEndpoints]string{
	adapters.EndpointEmbeddings:  "/embeddings",
	adapters.EndpointCompletions: "/completions",
	adapters.EndpointRerank:      "/rerank",
	adapters.EndpointImages:      "/images/generations",
	adapters.EndpointSpeech:      "/audio/speech",
	adapters.EndpointVideos:      "/videos",

	adapters.EndpointTranscriptions: "/audio/transcriptions",
	adapters.EndpointTranslations:   "/audio/translations",
	adapters.EndpointImageEdits:     "/images/edits",
}

// endpointURLs are the compiled URLs of one key's endpoints: a fixed URL,
// or (Azure's dated surface) the parts around the deployment.
type endpointURLs struct {
	fixed          [adapters.NumEndpoints]*fasthttp.URI
	prefix, suffix [adapters.NumEndpoints]string
	// videos is api_base + /videos split at its query, for task URLs.
	videos, videosQuery string
}

// compileEndpoints resolves the endpoint URLs of the key whose chat URL
// newAdapter resolved from base (api_base; the default when empty).
func (a *Adapter) compileEndpoints(base string, opts adapters.Options) error {
	for e := adapters.EndpointEmbeddings; e < adapters.NumEndpoints; e++ {
		p := endpointPaths[e]
		if !a.azure {
			if base == "" {
				base = DefaultBaseURL
			}
			u, err := adapters.JoinURL(base, p)
			if err != nil {
				return err
			}
			if a.ep.fixed[e], err = parseURI(u); err != nil {
				return err
			}
			if e == adapters.EndpointVideos {
				a.ep.videos, a.ep.videosQuery, _ = strings.Cut(u, "?")
			}
			continue
		}
		version := opts.AzureAPIVersion
		if version == "" {
			version = adapters.DefaultAzureAPIVersion
		}
		fixed, prefix, suffix, err := azureURLsFor(base, version, p)
		if err != nil {
			return err
		}
		if fixed != "" {
			if a.ep.fixed[e], err = parseURI(fixed); err != nil {
				return err
			}
		}
		a.ep.prefix[e], a.ep.suffix[e] = prefix, suffix
	}
	return nil
}

// Serves implements adapters.Capable: Azure OpenAI and first-party OpenAI
// have no /rerank; every other openai-compatible provider may (Cohere,
// Jina, Voyage, vLLM, TEI ... answer it at api_base + /rerank).
func (a *Adapter) Serves(e adapters.Endpoint) bool {
	switch e {
	case adapters.EndpointRerank:
		return !a.azure && !strings.EqualFold(a.keyProvider, "openai")
	case adapters.EndpointVideos: // Azure's video API has its own job shape
		return !a.azure
	}
	return e > adapters.EndpointNone && e < adapters.NumEndpoints
}

// BuildEmbeddings implements adapters.EmbeddingsBuilder.
func (a *Adapter) BuildEmbeddings(req *fasthttp.Request, in *adapters.ChatInput) error {
	return a.buildEndpoint(req, in, adapters.EndpointEmbeddings)
}

// BuildCompletions implements adapters.CompletionsBuilder.
func (a *Adapter) BuildCompletions(req *fasthttp.Request, in *adapters.ChatInput) error {
	return a.buildEndpoint(req, in, adapters.EndpointCompletions)
}

// BuildRerank implements adapters.RerankBuilder.
func (a *Adapter) BuildRerank(req *fasthttp.Request, in *adapters.ChatInput) error {
	if !a.Serves(adapters.EndpointRerank) {
		return adapters.ErrUnsupported
	}
	return a.buildEndpoint(req, in, adapters.EndpointRerank)
}

// BuildImages implements adapters.ImagesBuilder.
func (a *Adapter) BuildImages(req *fasthttp.Request, in *adapters.ChatInput) error {
	return a.buildEndpoint(req, in, adapters.EndpointImages)
}

// BuildSpeech implements adapters.SpeechBuilder.
func (a *Adapter) BuildSpeech(req *fasthttp.Request, in *adapters.ChatInput) error {
	return a.buildEndpoint(req, in, adapters.EndpointSpeech)
}

// BuildVideos implements adapters.VideosBuilder.
func (a *Adapter) BuildVideos(req *fasthttp.Request, in *adapters.ChatInput) error {
	if a.azure {
		return adapters.ErrUnsupported
	}
	return a.buildEndpoint(req, in, adapters.EndpointVideos)
}

// BuildVideoTask implements adapters.VideosBuilder. Task calls are rare
// (polls, downloads): their URL is built per call.
func (a *Adapter) BuildVideoTask(req *fasthttp.Request, in *adapters.ChatInput, method, id, sub string, query []byte) error {
	if a.azure {
		return adapters.ErrUnsupported
	}
	u := []byte(a.ep.videos)
	if id != "" {
		u = appendPathSegment(append(u, '/'), id)
		u = append(u, sub...)
	}
	if q := a.ep.videosQuery; q != "" || len(query) > 0 {
		u = append(append(u, '?'), q...)
		if q != "" && len(query) > 0 {
			u = append(u, '&')
		}
		u = append(u, query...)
	}
	req.Header.SetMethod(method)
	req.SetRequestURIBytes(u)
	req.URI().DisablePathNormalizing = true
	req.Header.SetCanonical(strAcceptEncoding, strIdentity)
	s := acquireScratch()
	defer releaseScratch(s)
	if a.sendsKey() {
		s.auth = append(append(s.auth[:0], a.authPrefix...), a.key.Reveal()...)
		req.Header.SetCanonical(a.authKey, s.auth)
	}
	s.hdr = a.rules.Apply(&req.Header, in.ClientHeaders, &in.Vars, in.CallerCredential, s.hdr)
	return nil
}

// BuildUpload implements adapters.UploadBuilder: the multipart endpoints
// are POSTed like the JSON ones, with the caller's Content-Type (boundary
// included); the edge sets the body stream.
func (a *Adapter) BuildUpload(req *fasthttp.Request, in *adapters.ChatInput, e adapters.Endpoint, contentType []byte) error {
	if !e.Upload() {
		return adapters.ErrUnsupported
	}
	s := acquireScratch()
	defer releaseScratch(s)
	a.endpointHead(req, in, e, s)
	req.Header.SetContentTypeBytes(contentType)
	return nil
}

// endpointHead writes method, URL, credential and header rules of e.
func (a *Adapter) endpointHead(req *fasthttp.Request, in *adapters.ChatInput, e adapters.Endpoint, s *scratch) {
	req.Header.SetMethodBytes(strPost)
	if u := a.ep.fixed[e]; u != nil {
		req.SetURI(u)
	} else {
		s.url = append(s.url[:0], a.ep.prefix[e]...)
		s.url = appendPathSegment(s.url, in.UpstreamModel)
		s.url = append(s.url, a.ep.suffix[e]...)
		req.SetRequestURIBytes(s.url)
		req.URI().DisablePathNormalizing = true
	}
	req.Header.SetCanonical(strAcceptEncoding, strIdentity)
	if a.key.IsSet() {
		s.auth = append(append(s.auth[:0], a.authPrefix...), a.key.Reveal()...)
		req.Header.SetCanonical(a.authKey, s.auth)
	}
	s.hdr = a.rules.Apply(&req.Header, in.ClientHeaders, &in.Vars, in.CallerCredential, s.hdr)
}

func (a *Adapter) buildEndpoint(req *fasthttp.Request, in *adapters.ChatInput, e adapters.Endpoint) error {
	s := acquireScratch()
	defer releaseScratch(s)
	body, err := rawjson.SetString(s.bufs[0][:0], in.Body, "model", in.UpstreamModel)
	if err != nil {
		return adapters.ErrBody
	}
	s.bufs[0] = body
	if in.Stream && in.ForceUsage && e == adapters.EndpointCompletions {
		// The caller did not ask for usage; gw needs it for the usage
		// record and token limits (the edge drops the extra chunk). The
		// caller's other stream options are kept.
		so := strIncludeUsage
		if cur, kind, ok := rawjson.Get(body, "stream_options"); ok && kind == rawjson.Object {
			if so, err = rawjson.Set(s.so[:0], cur, "include_usage", strTrue); err != nil {
				return adapters.ErrBody
			}
			s.so = so
		}
		if body, err = rawjson.Set(s.bufs[1][:0], body, "stream_options", so); err != nil {
			return adapters.ErrBody
		}
		s.bufs[1] = body
	}
	req.Header.SetMethodBytes(strPost)
	if u := a.ep.fixed[e]; u != nil {
		req.SetURI(u)
	} else {
		s.url = append(s.url[:0], a.ep.prefix[e]...)
		s.url = appendPathSegment(s.url, in.UpstreamModel)
		s.url = append(s.url, a.ep.suffix[e]...)
		req.SetRequestURIBytes(s.url)
		req.URI().DisablePathNormalizing = true
	}
	req.Header.SetContentTypeBytes(strApplicationJSON)
	req.Header.SetCanonical(strAcceptEncoding, strIdentity)
	if a.sendsKey() {
		s.auth = append(append(s.auth[:0], a.authPrefix...), a.key.Reveal()...)
		req.Header.SetCanonical(a.authKey, s.auth)
	}
	s.hdr = a.rules.Apply(&req.Header, in.ClientHeaders, &in.Vars, in.CallerCredential, s.hdr)
	req.SetBody(body)
	return nil
}
