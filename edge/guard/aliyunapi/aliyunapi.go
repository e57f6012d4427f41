// Package aliyunapi calls the Alibaba Cloud Content Moderation service
// (green-cip, API version 2022-03-02) for the Aliyun guardrail kinds:
// one action (TextModerationPlus, MultiModalGuard) with a Service name in
// the query and ServiceParameters ({"content": ...}) as the form body,
// signed with ACS3-HMAC-SHA256 (edge/guard/aliyunsign), through the
// shared remote-call layer (pooled client, timeout_ms per call, bounded
// concurrency).
//
// The answer envelope is {"Code":200,"Message":"OK","RequestId":...,
// "Data":{...}}; a Code other than 200 is a failed call (the engine's
// fail-open rules decide), and so is an envelope without Data.
package aliyunapi

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net/url"
	"strconv"
	"strings"
	"time"

	"gw/admin/resources"
	"gw/edge/guard"
	"gw/edge/guard/aliyunsign"
	"gw/edge/guard/remote"
)

// Version is the green-cip API version.
const Version = "2022-03-02"

// ChunkChars is the limit per call, in characters (spec "Limits": Aliyun
// chunk 2,000).
const ChunkChars = 2000

// DefaultEndpoint is the regional public endpoint.
func DefaultEndpoint(region string) string { return "https://green-cip." + region + ".aliyuncs.com" }

// Client calls one action of one account's endpoint. Immutable.
type Client struct {
	action string
	host   string
	path   string // canonical URI: the endpoint's path + "/"
	signer *aliyunsign.Signer
	eps    map[string]*remote.Endpoint // by Service, built once
	now    func() time.Time
}

// New builds the client of action for the services it will call.
func New(guardrail string, c *resources.AliyunCredentials, timeoutMS int64, action string, services ...string) (*Client, error) {
	base := c.Endpoint
	if base == "" {
		if c.Region == "" {
			return nil, errors.New("cannot build guardrail \"" + guardrail + "\": region is empty")
		}
		base = DefaultEndpoint(c.Region)
	}
	u, err := url.Parse(base)
	if err != nil || u.Host == "" {
		return nil, errors.New("cannot build guardrail \"" + guardrail + "\": endpoint must be an absolute http or https URL")
	}
	b, err := remote.New(remote.Config{Name: "aliyun " + action + " (guardrail " + guardrail + ")", BaseURL: base,
		Timeout: remote.Timeout(timeoutMS)})
	if err != nil {
		return nil, errors.New("cannot build guardrail \"" + guardrail + "\": " + err.Error())
	}
	cl := &Client{action: action, host: u.Host, path: strings.TrimRight(u.EscapedPath(), "/") + "/",
		signer: aliyunsign.New(c.AccessKeyID, c.AccessKeySecret.Reveal()), eps: map[string]*remote.Endpoint{}, now: time.Now}
	for _, s := range services {
		cl.eps[s] = b.Endpoint("/?Service=" + aliyunsign.Encode(s))
	}
	return cl, nil
}

var ctForm = "application/x-www-form-urlencoded"

// Call sends content to service and returns the answer's Data object
// (a sub-slice of buf.Resp). buf.Req and buf.Resp are overwritten. content
// must not alias buf.Req or buf.Resp.
func (c *Client) Call(ctx context.Context, service string, content []byte, buf *remote.Buffer) ([]byte, error) {
	ep := c.eps[service]
	if ep == nil {
		return nil, errors.New("BUG: aliyunapi: service " + service + " not declared")
	}
	// ServiceParameters={"content":...}, form-encoded.
	// The JSON is built in Resp (the answer overwrites it): Aux holds the
	// caller's joined text, which content may alias.
	js := append(buf.Resp[:0], `{"content":`...)
	js = remote.AppendString(js, content)
	js = append(js, '}')
	buf.Req = append(buf.Req[:0], "ServiceParameters="...)
	buf.Req = aliyunsign.AppendEncode(buf.Req, js)
	buf.Resp = js[:0]

	var nonce [16]byte
	_, _ = rand.Read(nonce[:])
	date := c.now().UTC().Format("2006-01-02T15:04:05Z")
	hdrs := [...]aliyunsign.Header{
		{Name: "host", Value: c.host},
		{Name: "content-type", Value: ctForm},
		{Name: "x-acs-action", Value: c.action},
		{Name: "x-acs-version", Value: Version},
		{Name: "x-acs-date", Value: date},
		{Name: "x-acs-signature-nonce", Value: hex.EncodeToString(nonce[:])},
	}
	auth, sum := c.signer.Sign(&aliyunsign.Request{Method: "POST", Path: c.path,
		Query: []aliyunsign.Header{{Name: "Service", Value: service}}, Headers: hdrs[:], Body: buf.Req})
	extra := [...]remote.Header{
		{Key: "Content-Type", Value: ctForm},
		{Key: "x-acs-action", Value: c.action},
		{Key: "x-acs-version", Value: Version},
		{Key: "x-acs-date", Value: date},
		{Key: "x-acs-signature-nonce", Value: hdrs[5].Value},
		{Key: "x-acs-content-sha256", Value: sum},
		{Key: "Authorization", Value: auth},
	}
	var err error
	if buf.Resp, err = ep.PostHeaders(ctx, buf.Req, buf.Resp[:0], extra[:]); err != nil {
		return nil, err
	}
	code, kind, ok := remote.Get(buf.Resp, "Code")
	if !ok || kind != remote.KindNumber {
		return nil, ep.Malformed("Code is not a number")
	}
	if n, _ := remote.Int(code); n != 200 {
		return nil, ep.Malformed("Code " + strconv.FormatInt(n, 10) + " is not 200")
	}
	data, kind, ok := remote.Get(buf.Resp, "Data")
	if !ok || kind != remote.KindObject {
		return nil, ep.Malformed("Data is not an object")
	}
	return data, nil
}

// Malformed is the error of a Data object without the documented shape.
func (c *Client) Malformed(service, what string) error { return c.eps[service].Malformed(what) }

// Level orders risk levels: none 0, low 1, medium 2, high 3; -1 unknown.
func Level(raw []byte) int {
	switch {
	case remote.StringEquals(raw, "none"):
		return 0
	case remote.StringEquals(raw, "low"):
		return 1
	case remote.StringEquals(raw, "medium"):
		return 2
	case remote.StringEquals(raw, "high"):
		return 3
	}
	return -1
}

// LevelOf is Level of a configured name.
func LevelOf(s string) int {
	switch s {
	case "none":
		return 0
	case "low":
		return 1
	case "medium":
		return 2
	case "high":
		return 3
	}
	return -1
}

// Join appends every text of req, newline-separated: what one check sends.
func Join(dst []byte, req *guard.Request) []byte {
	n := 0
	for _, t := range req.Texts {
		if len(t.Data) == 0 {
			continue
		}
		if n > 0 {
			dst = append(dst, '\n')
		}
		dst = append(dst, t.Data...)
		n++
	}
	return dst
}

// LabelOK accepts a service label as a recorded rule: short, of name
// characters (the service's labels look like political_entity or
// promptAttack); anything else, which could carry text, is not recorded.
func LabelOK(s []byte) bool {
	if len(s) == 0 || len(s) > 64 {
		return false
	}
	for _, c := range s {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-' || c == '.') {
			return false
		}
	}
	return true
}
