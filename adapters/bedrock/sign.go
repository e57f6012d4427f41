package bedrock

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"

	"github.com/valyala/fasthttp"
)

// SignRequest signs req as it will be sent, for requests gw relays
// rather than builds (passthrough routes in inject mode): SigV4 for
// service SigningName in the key's region with the key's credentials (the
// same provider and cache as the model calls), over the method, the URI
// (path as sent, query), the host and the Content-Type when set, and
// payloadHash, the lowercase hex SHA-256 of the body. It sets
// Authorization, X-Amz-Date and, with a session token,
// X-Amz-Security-Token; any x-amz-* header already on req must be removed
// by the caller (AWS requires them signed). Errors never carry the
// credentials.
func (a *Adapter) SignRequest(req *fasthttp.Request, payloadHash string) error {
	ctx := context.Background()
	cr, err := a.creds.Retrieve(ctx)
	if err != nil {
		return credError(a.name)
	}
	u := req.URI()
	// The path and query exactly as they go on the wire.
	raw, query, _ := strings.Cut(string(u.RequestURI()), "?")
	path, err := url.PathUnescape(raw)
	if err != nil {
		return errors.New("bedrock: cannot sign the request: its path is not escaped validly")
	}
	host := string(u.Host())
	hreq := &http.Request{Method: string(req.Header.Method()), Host: host, Header: http.Header{},
		URL: &url.URL{Scheme: "https", Host: host, Path: path, RawPath: raw, RawQuery: query}}
	if ct := req.Header.ContentType(); len(ct) > 0 {
		hreq.Header.Set("Content-Type", string(ct))
	}
	if err := a.signer.SignHTTP(ctx, cr, hreq, payloadHash, SigningName, a.region, a.now().UTC()); err != nil {
		return errors.New("bedrock: cannot sign the request: " + err.Error())
	}
	req.Header.Set("Authorization", hreq.Header.Get("Authorization"))
	req.Header.Set("X-Amz-Date", hreq.Header.Get("X-Amz-Date"))
	if t := hreq.Header.Get("X-Amz-Security-Token"); t != "" {
		req.Header.Set("X-Amz-Security-Token", t)
	}
	return nil
}
