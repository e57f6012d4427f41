package adapters

import "github.com/valyala/fasthttp"

// EndpointAnswerer is implemented by adapters whose upstream answers an
// endpoint in its own wire format (Bedrock's InvokeModel bodies, Vertex's
// predict): AnswerEndpoint appends to dst the answer the caller's endpoint
// defines (OpenAI embeddings list, Cohere rerank results) for the
// upstream's 2xx resp, with `model` present for the edge to set to the
// alias and usage where the upstream reports it. req is the caller's body.
type EndpointAnswerer interface {
	AnswerEndpoint(dst []byte, e Endpoint, req []byte, resp *fasthttp.Response) ([]byte, error)
}

// RequestError is a caller body an adapter cannot send to its upstream for
// a reason the caller can fix (an embeddings input shape the upstream
// lacks): the edge answers 400 invalid_request_error with its text.
type RequestError string

func (e RequestError) Error() string { return string(e) }
