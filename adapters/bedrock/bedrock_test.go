package bedrock

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/valyala/fasthttp"

	"gw/adapters"
	"gw/adapters/headers"
)

const doc = `{"access_key_id":"AKIDEXAMPLE","secret_access_key":"wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY","session_token":"tok","region":"eu-central-1"}`

var fixed = time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)

func newAdapter(t testing.TB, base string, h headers.Config) *Adapter {
	t.Helper()
	a, err := NewWith(&adapters.KeyConfig{Name: "k", Credential: adapters.NewSecret(doc), BaseURL: base, Headers: h}, Options{Now: func() time.Time { return fixed }})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func build(t testing.TB, a *Adapter, model string, stream bool, client *fasthttp.RequestHeader) *fasthttp.Request {
	t.Helper()
	req := fasthttp.AcquireRequest()
	in := &adapters.ChatInput{Body: []byte(`{"model":"x","messages":[{"role":"user","content":"hi"}]}`), UpstreamModel: model, Stream: stream, ClientHeaders: client}
	if err := a.BuildChat(req, in); err != nil {
		t.Fatal(err)
	}
	return req
}

func TestBuildChat(t *testing.T) {
	a := newAdapter(t, "", headers.Config{})
	if a.base != "https://bedrock-runtime.eu-central-1.amazonaws.com" {
		t.Fatalf("base %q", a.base)
	}
	req := build(t, a, "us.anthropic.claude-3-7-sonnet-20250219-v1:0", true, nil)
	if got := string(req.RequestURI()); got != "/model/us.anthropic.claude-3-7-sonnet-20250219-v1%3A0/converse-stream" {
		t.Fatalf("wire path %q", got)
	}
	if string(req.Header.Peek("Accept")) != "application/vnd.amazon.eventstream" || string(req.Header.ContentType()) != "application/json" {
		t.Fatalf("headers %s", req.Header.Header())
	}
	auth := string(req.Header.Peek("Authorization"))
	if !strings.HasPrefix(auth, "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20261125/eu-central-1/bedrock/aws4_request, SignedHeaders=content-type;host;x-amz-date;x-amz-security-token, Signature=") ||
		string(req.Header.Peek("X-Amz-Date")) != "20261125T120000Z" || string(req.Header.Peek("X-Amz-Security-Token")) != "tok" {
		t.Fatalf("signature headers: %s", req.Header.Header())
	}
	// The same signature recomputed independently: the canonical path is the
	// wire path escaped once more (protocols.md §5.5).
	sum := sha256.Sum256(req.Body())
	hr := &http.Request{Method: "POST", Host: "bedrock-runtime.eu-central-1.amazonaws.com", Header: http.Header{"Content-Type": {"application/json"}},
		URL: &url.URL{Scheme: "https", Host: "bedrock-runtime.eu-central-1.amazonaws.com",
			Path: "/model/us.anthropic.claude-3-7-sonnet-20250219-v1:0/converse-stream", RawPath: "/model/us.anthropic.claude-3-7-sonnet-20250219-v1%3A0/converse-stream"}}
	creds := aws.Credentials{AccessKeyID: "AKIDEXAMPLE", SecretAccessKey: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", SessionToken: "tok"}
	if err := v4.NewSigner().SignHTTP(context.Background(), creds, hr, hex.EncodeToString(sum[:]), "bedrock", "eu-central-1", fixed); err != nil {
		t.Fatal(err)
	}
	if hr.Header.Get("Authorization") != auth {
		t.Fatalf("signature differs:\n%s\n%s", auth, hr.Header.Get("Authorization"))
	}
	if !strings.Contains(string(req.Body()), `"messages":[{"role":"user","content":[{"text":"hi"}]}]`) {
		t.Fatalf("body %s", req.Body())
	}

	req = build(t, a, "arn:aws:bedrock:us-east-1:123:inference-profile/us.amazon.nova-pro-v1:0", false, nil)
	if got := string(req.RequestURI()); got != "/model/arn%3Aaws%3Abedrock%3Aus-east-1%3A123%3Ainference-profile%2Fus.amazon.nova-pro-v1%3A0/converse" ||
		string(req.Header.Peek("Accept")) != "application/json" {
		t.Fatalf("ARN path %q", got)
	}
}

func TestAPIBaseAndDroppedHeaders(t *testing.T) {
	a := newAdapter(t, "http://vpce-1.example:8443/prefix/", headers.Config{ForwardClientHeaders: []string{"x-*", "authorization"}})
	var client fasthttp.RequestHeader
	client.Set("Authorization", "Bearer caller")
	client.Set("X-Amz-Date", "19990101T000000Z")
	client.Set("X-Amz-Security-Token", "forged")
	client.Set("X-Amz-Content-Sha256", "forged")
	client.Set("X-Trace", "kept")
	req := build(t, a, "amazon.titan", false, &client)
	if string(req.Host()) != "vpce-1.example:8443" || string(req.RequestURI()) != "/prefix/model/amazon.titan/converse" {
		t.Fatalf("host %q uri %q", req.Host(), req.RequestURI())
	}
	if string(req.Header.Peek("X-Amz-Date")) != "20261125T120000Z" || string(req.Header.Peek("X-Amz-Security-Token")) != "tok" ||
		len(req.Header.Peek("X-Amz-Content-Sha256")) != 0 || !strings.HasPrefix(string(req.Header.Peek("Authorization")), "AWS4-HMAC-SHA256 ") ||
		string(req.Header.Peek("X-Trace")) != "kept" {
		t.Fatalf("headers:\n%s", req.Header.Header())
	}
	// The signature's region stays the credential's, the service bedrock.
	if !strings.Contains(string(req.Header.Peek("Authorization")), "/eu-central-1/bedrock/aws4_request") {
		t.Fatalf("scope: %s", req.Header.Peek("Authorization"))
	}
}

func TestCredentials(t *testing.T) {
	noEnv := func(string) (string, bool) { return "", false }
	f := func(doc string, env func(string) (string, bool), wantRegion string, wantErr error) {
		t.Helper()
		_, region, err := Credentials(adapters.NewSecret(doc), env)
		if region != wantRegion || !errors.Is(err, wantErr) {
			t.Fatalf("%s: got %q %v; want %q %v", doc, region, err, wantRegion, wantErr)
		}
		if err != nil && strings.Contains(err.Error(), "s3cr3t") {
			t.Fatalf("the error quotes the secret: %v", err)
		}
	}
	f(`{"access_key_id":"a","secret_access_key":"s3cr3t","region":"us-west-2"}`, noEnv, "us-west-2", nil)
	f(`{"access_key_id":"a","secret_access_key":"s3cr3t"}`, func(k string) (string, bool) { return "ap-south-1", k == "AWS_REGION" }, "ap-south-1", nil)
	f(`{"access_key_id":"a","secret_access_key":"s3cr3t"}`, noEnv, "", errNoRegion)
	f(`{"access_key_id":"a","secret_access_key":"s3cr3t","extra":1}`, noEnv, "", errCredentials)
	f(`{"access_key_id":"a"}`, noEnv, "", errCredentials)
	f(`{"secret_access_key":"s3cr3t","region":"x"}`, noEnv, "", errCredentials)
	f(`s3cr3t`, noEnv, "", errCredentials)
}

// TestCredentialChain: a document without keys takes them from the AWS
// chain (here the environment), with the document's region.
func TestCredentialChain(t *testing.T) {
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDENV")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "envsecret")
	t.Setenv("AWS_SESSION_TOKEN", "")
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(t.TempDir(), "none"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(t.TempDir(), "none"))
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	t.Setenv("AWS_REGION", "ap-northeast-1")
	for doc, wantRegion := range map[string]string{`{"region":"sa-east-1"}`: "sa-east-1", `{}`: "ap-northeast-1", "": "ap-northeast-1"} {
		p, region, err := Credentials(adapters.NewSecret(doc), nil)
		if err != nil || region != wantRegion {
			t.Fatalf("%q: %q %v", doc, region, err)
		}
		c, err := p.Retrieve(context.Background())
		if err != nil || c.AccessKeyID != "AKIDENV" || c.SecretAccessKey != "envsecret" {
			t.Fatalf("%q: %+v %v", doc, c.AccessKeyID, err)
		}
	}
}

func TestNeverPrintsCredential(t *testing.T) {
	a := newAdapter(t, "", headers.Config{})
	for _, s := range []string{a.String(), a.GoString()} {
		if strings.Contains(s, "wJalr") {
			t.Fatal(s)
		}
	}
}

func TestIsAnthropic(t *testing.T) {
	for m, want := range map[string]bool{
		"anthropic.claude-3-haiku-20240307-v1:0": true, "us.anthropic.claude-3-7-sonnet-20250219-v1:0": true,
		"arn:aws:bedrock:us-east-1:1:application-inference-profile/claude-x": true,
		"us.amazon.nova-micro-v1:0": false, "meta.llama3-70b-instruct-v1:0": false,
	} {
		if IsAnthropic(m) != want {
			t.Errorf("%s: %v", m, !want)
		}
	}
}
