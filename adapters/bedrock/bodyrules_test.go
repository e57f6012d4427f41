package bedrock

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/valyala/fasthttp"

	"gw/adapters"
	"gw/adapters/bodyrules"
)

// TestBodyRules: the temperature bounds reach inferenceConfig.temperature,
// renames and defaults act on the Converse body, and the signature covers
// the body as sent.
func TestBodyRules(t *testing.T) {
	half, low := 0.5, 0.2
	k := adapters.KeyConfig{Name: "k", Credential: adapters.NewSecret(doc), Body: bodyrules.Config{
		TemperatureMax: &half, TemperatureMin: &low,
		ParamRenames:      []bodyrules.Rename{{From: "toolConfig", To: "toolConfigX"}},
		DefaultBodyFields: []bodyrules.Field{{Key: "guardrailConfig", Value: []byte(`{"guardrailIdentifier":"g","guardrailVersion":"1"}`)}, {Key: "system", Value: []byte(`[{"text":"ignored: gw set it"}]`)}},
	}}
	a, err := NewWith(&k, Options{Now: func() time.Time { return fixed }})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ chat, want, not string }{
		{`{"model":"x","messages":[{"role":"system","content":"s"},{"role":"user","content":"hi"}],"temperature":0.9}`, `"temperature":0.5`, `ignored`},
		{`{"model":"x","messages":[{"role":"user","content":"hi"}],"temperature":0.05}`, `"temperature":0.2`, `"temperature":0.05`},
		{`{"model":"x","messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"f"}}]}`, `"toolConfigX":{`, `"toolConfig":`},
	} {
		req := fasthttp.AcquireRequest()
		if err := a.BuildChat(req, &adapters.ChatInput{Body: []byte(tc.chat), UpstreamModel: "amazon.nova-micro-v1:0"}); err != nil {
			t.Fatal(err)
		}
		body := string(req.Body())
		if !strings.Contains(body, tc.want) || strings.Contains(body, tc.not) || !strings.Contains(body, `"guardrailConfig":{"guardrailIdentifier":"g"`) {
			t.Fatalf("%s:\n%s", tc.chat, body)
		}
		// The signature is over the edited body.
		checkSignature(t, req)
		fasthttp.ReleaseRequest(req)
	}
}

// checkSignature recomputes the SigV4 signature of req (built by an adapter
// on the default eu-central-1 host with doc's keys) with the SDK's signer.
func checkSignature(t *testing.T, req *fasthttp.Request) {
	t.Helper()
	raw := string(req.RequestURI())
	p, err := url.PathUnescape(raw)
	if err != nil {
		t.Fatal(err)
	}
	const host = "bedrock-runtime.eu-central-1.amazonaws.com"
	sum := sha256.Sum256(req.Body())
	hr := &http.Request{Method: "POST", Host: host, Header: http.Header{"Content-Type": {"application/json"}},
		URL: &url.URL{Scheme: "https", Host: host, Path: p, RawPath: raw}}
	creds := aws.Credentials{AccessKeyID: "AKIDEXAMPLE", SecretAccessKey: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", SessionToken: "tok"}
	if err := v4.NewSigner().SignHTTP(context.Background(), creds, hr, hex.EncodeToString(sum[:]), "bedrock", "eu-central-1", fixed); err != nil {
		t.Fatal(err)
	}
	if got := string(req.Header.Peek("Authorization")); hr.Header.Get("Authorization") != got {
		t.Fatalf("signature differs:\n%s\n%s", got, hr.Header.Get("Authorization"))
	}
}
