package adapters

// Realtime is implemented by adapters whose endpoint serves the OpenAI
// Realtime API over WebSocket (/v1/realtime). The edge dials the target once
// per session; nothing here runs per frame. An adapter without it (or one
// that reports ErrUnsupported) answers /v1/realtime with 501.
type Realtime interface {
	// RealtimeTarget returns where and how to open the upstream session of
	// upstreamModel (the direct model's model_name).
	RealtimeTarget(upstreamModel string) (RealtimeTarget, error)
}

// RealtimeTarget is one upstream Realtime session to dial.
type RealtimeTarget struct {
	// URL is the ws:// or wss:// URL of the session, model query included.
	URL string
	// AuthHeader and AuthValue are the credential header (canonical name
	// and value, already revealed: never log it); both "" when the URL's
	// user-info authenticates or the key has no credential.
	AuthHeader, AuthValue string
	// Forward reports whether a client header (any case) is relayed
	// (request.forward_client_headers; default_headers never apply on
	// /v1/realtime). nil relays none.
	Forward func(name []byte) bool
}
