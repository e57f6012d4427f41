package adapters

import "github.com/valyala/fasthttp"

// Endpoint is a caller endpoint beyond the chat-shaped surfaces: its body
// goes upstream in its own (OpenAI) wire format with only `model` rewritten,
// and an upstream that lacks it cannot serve the call at all (there is no
// conversion through chat completions).
type Endpoint uint8

// Endpoints. EndpointNone is the chat-shaped surfaces.
const (
	EndpointNone           Endpoint = iota
	EndpointEmbeddings              // POST /v1/embeddings
	EndpointCompletions             // POST /v1/completions (legacy text completions)
	EndpointRerank                  // POST /v1/rerank (Cohere/Jina shape)
	EndpointImages                  // POST /v1/images/generations (JSON)
	EndpointSpeech                  // POST /v1/audio/speech (binary audio, or SSE)
	EndpointVideos                  // POST /v1/videos and the task calls under it
	EndpointTranscriptions          // POST /v1/audio/transcriptions (multipart upload)
	EndpointTranslations            // POST /v1/audio/translations (multipart upload)
	EndpointImageEdits              // POST /v1/images/edits (multipart upload)
	NumEndpoints
)

var endpointPaths = [NumEndpoints]string{
	EndpointEmbeddings:  "/v1/embeddings",
	EndpointCompletions: "/v1/completions",
	EndpointRerank:      "/v1/rerank",
	EndpointImages:      "/v1/images/generations",
	EndpointSpeech:      "/v1/audio/speech",
	EndpointVideos:      "/v1/videos",

	EndpointTranscriptions: "/v1/audio/transcriptions",
	EndpointTranslations:   "/v1/audio/translations",
	EndpointImageEdits:     "/v1/images/edits",
}

// Upload reports whether e takes a multipart/form-data body (UploadBuilder).
func (e Endpoint) Upload() bool {
	return e == EndpointTranscriptions || e == EndpointTranslations || e == EndpointImageEdits
}

// String is the endpoint's caller path.
func (e Endpoint) String() string {
	if e >= NumEndpoints {
		return ""
	}
	return endpointPaths[e]
}

// Caps is a set of endpoints.
type Caps uint16

// Has reports whether e is in c.
func (c Caps) Has(e Endpoint) bool { return e != EndpointNone && c&(1<<e) != 0 }

// With returns c with e added.
func (c Caps) With(e Endpoint) Caps { return c | 1<<e }

// Without returns c with e removed.
func (c Caps) Without(e Endpoint) Caps { return c &^ (1 << e) }

// EmbeddingsBuilder is implemented by adapters whose upstream serves
// /embeddings: in.Body is the caller's embeddings body (input, dimensions,
// encoding_format pass through unchanged).
type EmbeddingsBuilder interface {
	BuildEmbeddings(req *fasthttp.Request, in *ChatInput) error
}

// CompletionsBuilder is implemented by adapters whose upstream serves the
// legacy /completions endpoint.
type CompletionsBuilder interface {
	BuildCompletions(req *fasthttp.Request, in *ChatInput) error
}

// RerankBuilder is implemented by adapters whose upstream may serve /rerank.
type RerankBuilder interface {
	BuildRerank(req *fasthttp.Request, in *ChatInput) error
}

// ImagesBuilder is implemented by adapters whose upstream serves
// /images/generations.
type ImagesBuilder interface {
	BuildImages(req *fasthttp.Request, in *ChatInput) error
}

// SpeechBuilder is implemented by adapters whose upstream serves
// /audio/speech.
type SpeechBuilder interface {
	BuildSpeech(req *fasthttp.Request, in *ChatInput) error
}

// VideosBuilder is implemented by adapters whose upstream serves video
// tasks: BuildVideos the creation (POST /videos with the caller's JSON
// body), BuildVideoTask the calls on existing tasks: method GET or DELETE
// on /videos (list; id ""), /videos/{id}, or /videos/{id}{sub} (sub
// "/content"), with the caller's query string.
type VideosBuilder interface {
	BuildVideos(req *fasthttp.Request, in *ChatInput) error
	BuildVideoTask(req *fasthttp.Request, in *ChatInput, method, id, sub string, query []byte) error
}

// UploadBuilder is implemented by adapters whose upstream serves the
// multipart endpoints (Endpoint.Upload): BuildUpload writes the method, URL
// and headers of endpoint e with contentType, the caller's
// multipart/form-data Content-Type (its boundary is kept: the edge streams
// the caller's body through with only text fields rewritten, and sets it as
// the request's body stream). in.Body is unused.
type UploadBuilder interface {
	BuildUpload(req *fasthttp.Request, in *ChatInput, e Endpoint, contentType []byte) error
}

// Capable narrows the endpoints an adapter's type implements to those its
// provider key serves (first-party OpenAI has no /rerank).
type Capable interface {
	Serves(e Endpoint) bool
}

// CapsOf returns the endpoints adapter a serves. It is resolved once, when
// a snapshot is compiled.
func CapsOf(a Adapter) Caps {
	var c Caps
	if _, ok := a.(EmbeddingsBuilder); ok {
		c = c.With(EndpointEmbeddings)
	}
	if _, ok := a.(CompletionsBuilder); ok {
		c = c.With(EndpointCompletions)
	}
	if _, ok := a.(RerankBuilder); ok {
		c = c.With(EndpointRerank)
	}
	if _, ok := a.(ImagesBuilder); ok {
		c = c.With(EndpointImages)
	}
	if _, ok := a.(SpeechBuilder); ok {
		c = c.With(EndpointSpeech)
	}
	if _, ok := a.(VideosBuilder); ok {
		c = c.With(EndpointVideos)
	}
	if _, ok := a.(UploadBuilder); ok {
		c = c.With(EndpointTranscriptions).With(EndpointTranslations).With(EndpointImageEdits)
	}
	if cp, ok := a.(Capable); ok {
		for e := EndpointEmbeddings; e < NumEndpoints; e++ {
			if c.Has(e) && !cp.Serves(e) {
				c = c.Without(e)
			}
		}
	}
	return c
}

// BuildEndpoint writes the upstream request of endpoint e through a's
// builder for it; ErrUnsupported when a has none. The rest is as for
// Adapter.BuildChat.
func BuildEndpoint(a Adapter, e Endpoint, req *fasthttp.Request, in *ChatInput) error {
	switch e {
	case EndpointEmbeddings:
		if b, ok := a.(EmbeddingsBuilder); ok {
			return b.BuildEmbeddings(req, in)
		}
	case EndpointCompletions:
		if b, ok := a.(CompletionsBuilder); ok {
			return b.BuildCompletions(req, in)
		}
	case EndpointRerank:
		if b, ok := a.(RerankBuilder); ok {
			return b.BuildRerank(req, in)
		}
	case EndpointImages:
		if b, ok := a.(ImagesBuilder); ok {
			return b.BuildImages(req, in)
		}
	case EndpointSpeech:
		if b, ok := a.(SpeechBuilder); ok {
			return b.BuildSpeech(req, in)
		}
	case EndpointVideos:
		if b, ok := a.(VideosBuilder); ok {
			return b.BuildVideos(req, in)
		}
	}
	return ErrUnsupported
}

// BuildUpload writes the upstream request of upload endpoint e through a's
// UploadBuilder; ErrUnsupported when a has none.
func BuildUpload(a Adapter, e Endpoint, req *fasthttp.Request, in *ChatInput, contentType []byte) error {
	if b, ok := a.(UploadBuilder); ok && e.Upload() {
		return b.BuildUpload(req, in, e, contentType)
	}
	return ErrUnsupported
}
