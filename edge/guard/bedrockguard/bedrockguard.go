// Package bedrockguard is the `bedrock` guardrail kind: Amazon Bedrock
// Guardrails' ApplyGuardrail (POST {bedrock-runtime}/guardrail/{id}/
// version/{version}/apply), signed with SigV4 by the AWS SDK signer the
// Bedrock adapter uses (signing name bedrock, adapters/bedrock).
//
// One call per check: every non-empty text is one content block, source
// INPUT or OUTPUT. The answer's action NONE passes. GUARDRAIL_INTERVENED
// blocks when any assessment's action is BLOCKED (the rule is that
// policy: topicPolicy, contentPolicy, wordPolicy,
// sensitiveInformationPolicy, contextualGroundingPolicy, ...); when the
// only actions are ANONYMIZED (sensitive information filters set to
// mask), the texts are rewritten with the answer's outputs, one per
// content block sent; any other intervention blocks.
//
// latency_mode: serial waits for the answer (bounded by the spec's
// default timeout_ms, 5000 ms, since this kind rejects timeout_ms; a
// timeout is a failed check and fail_open decides). timed waits at most
// its timeout_ms (100–5000): when the answer is late the content is
// released and the engine records the bypass timed_release
// (guard.ErrReleased).
//
// The endpoint is the regional bedrock-runtime URL; the AWS SDKs'
// standard endpoint variables AWS_ENDPOINT_URL_BEDROCK_RUNTIME (then
// AWS_ENDPOINT_URL) replace it when set, read when the guardrail is
// compiled (VPC endpoints, tests).
package bedrockguard

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"

	"gw/adapters/bedrock"
	"gw/admin/resources"
	"gw/edge/guard"
	"gw/edge/guard/remote"
	"gw/sse/rawjson"
)

// Interface guards.
var _ guard.Checker = (*Checker)(nil)

// Checker is one compiled guardrail. Immutable, safe for concurrent use.
type Checker struct {
	ep     *remote.Endpoint
	timed  bool
	host   string
	path   string // decoded
	raw    string // escaped, as sent
	region string
	creds  aws.Credentials
	signer *v4.Signer
	now    func() time.Time
}

// serialTimeout bounds a serial call: the spec's default timeout_ms (a
// variable for tests).
var serialTimeout = remote.Timeout(0)

// Env names the endpoint override variables, most specific first.
var Env = []string{"AWS_ENDPOINT_URL_BEDROCK_RUNTIME", "AWS_ENDPOINT_URL"}

// New compiles g.
func New(g *resources.Guardrail) (guard.Checker, error) {
	o, ok := g.Options.(*resources.BedrockGuardrailOptions)
	if !ok || o == nil {
		return nil, errors.New("cannot build guardrail \"" + g.Name + "\": options are not bedrock options")
	}
	c, err := NewChecker(g.Name, o, os.LookupEnv)
	if err != nil {
		return nil, err
	}
	return c, nil
}

// NewChecker is New with the environment lookup given (tests).
func NewChecker(name string, o *resources.BedrockGuardrailOptions, env func(string) (string, bool)) (*Checker, error) {
	if o.Region == "" || o.GuardrailID == "" || o.GuardrailVersion == "" {
		return nil, errors.New("cannot build guardrail \"" + name + "\": region, guardrail_id and guardrail_version are required")
	}
	base := bedrock.DefaultBaseURL(o.Region)
	for _, k := range Env {
		if v, ok := env(k); ok && v != "" {
			base = v
			break
		}
	}
	timeout := serialTimeout
	timed := o.LatencyMode == resources.BedrockLatencyTimed
	if timed {
		timeout = time.Duration(o.LatencyTimeoutMS) * time.Millisecond
	}
	b, err := remote.New(remote.Config{Name: "bedrock ApplyGuardrail (guardrail " + name + ")", BaseURL: base, Timeout: timeout})
	if err != nil {
		return nil, errors.New("cannot build guardrail \"" + name + "\": " + err.Error())
	}
	u, _ := url.Parse(base) // remote.New checked it
	prefix := strings.TrimRight(u.Path, "/")
	rawPrefix := strings.TrimRight(u.EscapedPath(), "/")
	c := &Checker{timed: timed, host: u.Host, region: o.Region, signer: v4.NewSigner(), now: time.Now,
		creds: aws.Credentials{AccessKeyID: o.Credentials.AccessKeyID, SecretAccessKey: o.Credentials.SecretAccessKey.Reveal(), Source: "gw guardrail"},
		path:  prefix + "/guardrail/" + o.GuardrailID + "/version/" + o.GuardrailVersion + "/apply",
		raw:   rawPrefix + "/guardrail/" + escape(o.GuardrailID) + "/version/" + escape(o.GuardrailVersion) + "/apply",
	}
	c.ep = b.Endpoint(strings.TrimPrefix(c.raw, rawPrefix))
	return c, nil
}

// escape percent-encodes a path label as the AWS SDKs do: a guardrail ARN's
// ':' and '/' become %3A and %2F.
func escape(s string) string { return strings.ReplaceAll(url.PathEscape(s), ":", "%3A") }

// Check sends req's texts in one ApplyGuardrail call.
func (c *Checker) Check(ctx context.Context, req *guard.Request, v *guard.Verdict) error {
	buf := remote.GetBuffer()
	defer remote.PutBuffer(buf)
	var idxArr [16]int
	idx := idxArr[:0] // content block i is req.Texts[idx[i]]
	buf.Req = append(buf.Req[:0], `{"source":"INPUT","content":[`...)
	if req.Phase == guard.Output {
		buf.Req = append(buf.Req[:0], `{"source":"OUTPUT","content":[`...)
	}
	for i, t := range req.Texts {
		if len(t.Data) == 0 {
			continue
		}
		if len(idx) > 0 {
			buf.Req = append(buf.Req, ',')
		}
		buf.Req = append(buf.Req, `{"text":{"text":`...)
		buf.Req = remote.AppendString(buf.Req, t.Data)
		buf.Req = append(buf.Req, "}}"...)
		idx = append(idx, i)
	}
	if len(idx) == 0 {
		return nil
	}
	buf.Req = append(buf.Req, "]}"...)

	auth, date, err := c.sign(buf.Req)
	if err != nil {
		return err
	}
	extra := [...]remote.Header{{Key: "X-Amz-Date", Value: date}, {Key: "Authorization", Value: auth}}
	if buf.Resp, err = c.ep.PostHeaders(ctx, buf.Req, buf.Resp[:0], extra[:]); err != nil {
		var re *remote.Error
		if c.timed && errors.As(err, &re) && re.Timeout() {
			return errors.Join(guard.ErrReleased, err)
		}
		return err
	}
	return c.Judge(buf.Resp, req, idx, v)
}

// sign returns the SigV4 Authorization and X-Amz-Date of a POST of body.
func (c *Checker) sign(body []byte) (auth, date string, err error) {
	sum := sha256.Sum256(body)
	hreq := &http.Request{Method: http.MethodPost, Host: c.host,
		URL:    &url.URL{Scheme: "https", Host: c.host, Path: c.path, RawPath: c.raw},
		Header: http.Header{"Content-Type": []string{"application/json"}}}
	if err := c.signer.SignHTTP(context.Background(), c.creds, hreq, hex.EncodeToString(sum[:]), bedrock.SigningName, c.region, c.now().UTC()); err != nil {
		return "", "", errors.New("bedrock guardrail: cannot sign the request")
	}
	return hreq.Header.Get("Authorization"), hreq.Header.Get("X-Amz-Date"), nil
}

// Actions found in the assessments.
type actions struct {
	blocked, anonymized, other bool
	rule                       string // the first BLOCKED's policy
}

// Judge reads an ApplyGuardrail answer into v.
func (c *Checker) Judge(resp []byte, req *guard.Request, idx []int, v *guard.Verdict) error {
	act, kind, ok := remote.Get(resp, "action")
	if !ok || kind != remote.KindString {
		return c.ep.Malformed("action is not a string")
	}
	if remote.StringEquals(act, "NONE") {
		return nil
	}
	if !remote.StringEquals(act, "GUARDRAIL_INTERVENED") {
		return c.ep.Malformed("action is neither NONE nor GUARDRAIL_INTERVENED")
	}
	var a actions
	if as, k, ok := remote.Get(resp, "assessments"); ok && k != remote.KindNull {
		if k != remote.KindArray {
			return c.ep.Malformed("assessments is not an array")
		}
		if err := remote.EachElem(as, func(_ int, e []byte, ek rawjson.Kind) bool {
			if ek == remote.KindObject {
				_ = remote.EachKey(e, func(key, val []byte, _ rawjson.Kind) bool {
					a.walk(policyName(key), val, 0)
					return true
				})
			}
			return true
		}); err != nil {
			return c.ep.Malformed("assessments is not an array")
		}
	}
	if a.blocked || !a.anonymized || a.other {
		v.Action, v.Rule = guard.Block, a.rule
		if v.Rule == "" {
			v.Rule = "guardrail_intervened"
		}
		return nil
	}
	// Only ANONYMIZED: the outputs are the masked texts, one per block sent.
	outs, k, ok := remote.Get(resp, "outputs")
	if !ok || k != remote.KindArray {
		return c.ep.Malformed("outputs is not an array")
	}
	n, bad := 0, false
	err := remote.EachElem(outs, func(i int, e []byte, _ rawjson.Kind) bool {
		n++
		t, tk, ok := remote.Get(e, "text")
		if !ok || tk != remote.KindString || i >= len(idx) {
			bad = true
			return false
		}
		start := len(v.Buf)
		var err error
		if v.Buf, err = remote.Unquote(v.Buf, t); err != nil {
			bad = true
			return false
		}
		v.Masks = append(v.Masks, guard.Mask{Index: idx[i], Data: v.Buf[start:len(v.Buf):len(v.Buf)]})
		return true
	})
	if err != nil || bad || n != len(idx) {
		v.Masks, v.Buf = v.Masks[:0], v.Buf[:0]
		return c.ep.Malformed("outputs do not hold one text per content block sent")
	}
	// Keep only the texts that changed; Data slices stay valid (Buf is not
	// appended to again).
	m := v.Masks[:0]
	for _, x := range v.Masks {
		if string(x.Data) != string(req.Texts[x.Index].Data) {
			m = append(m, x)
		}
	}
	v.Masks = m
	if len(m) > 0 {
		v.Action, v.Rule = guard.Rewrite, "sensitiveInformationPolicy"
	}
	return nil
}

// policyName returns the assessment key as a rule name when it is a
// known policy ("" otherwise).
func policyName(key []byte) string {
	for _, p := range policies {
		if remote.StringEquals(key, p) {
			return p
		}
	}
	return ""
}

var policies = [...]string{"topicPolicy", "contentPolicy", "wordPolicy", "sensitiveInformationPolicy",
	"contextualGroundingPolicy", "automatedReasoningPolicy"}

// walk visits every "action" member under one policy.
func (a *actions) walk(policy string, val []byte, depth int) {
	if depth > 8 {
		return
	}
	switch rawjson.KindOf(val) {
	case rawjson.Object:
		_ = remote.EachKey(val, func(key, v []byte, k rawjson.Kind) bool {
			if k == remote.KindString && remote.StringEquals(key, "action") {
				switch {
				case remote.StringEquals(v, "BLOCKED"):
					if !a.blocked && policy != "" {
						a.rule = policy
					}
					a.blocked = true
				case remote.StringEquals(v, "ANONYMIZED"):
					a.anonymized = true
				case remote.StringEquals(v, "NONE"):
				default:
					a.other = true
				}
				return true
			}
			a.walk(policy, v, depth+1)
			return true
		})
	case rawjson.Array:
		_ = remote.EachElem(val, func(_ int, v []byte, _ rawjson.Kind) bool {
			a.walk(policy, v, depth+1)
			return true
		})
	}
}
