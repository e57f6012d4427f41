package bedrock

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/url"
	"os"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/valyala/fasthttp"

	"gw/adapters"
	"gw/adapters/headers"
)

// benchSign signs a 4 KB body as BuildChat does; newSigner true makes a
// signer per request, so the signing key (four HMACs) is derived every time
// instead of coming from the signer's per credential/day/region cache.
func benchSign(b *testing.B, newSigner bool) {
	body := bytes.Repeat([]byte("a"), 4096)
	creds := aws.Credentials{AccessKeyID: "AKIDEXAMPLE", SecretAccessKey: "secret", SessionToken: "tok"}
	signer := v4.NewSigner()
	u := &url.URL{Scheme: "https", Host: "bedrock-runtime.us-east-1.amazonaws.com", Path: "/model/us.amazon.nova-micro-v1:0/converse-stream",
		RawPath: "/model/us.amazon.nova-micro-v1%3A0/converse-stream"}
	hr := &http.Request{Method: "POST", URL: u, Host: u.Host, Header: http.Header{}}
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		clear(hr.Header)
		hr.Header["Content-Type"] = contentTypeJSON
		sum := sha256.Sum256(body)
		var h [64]byte
		hex.Encode(h[:], sum[:])
		s := signer
		if newSigner {
			s = v4.NewSigner()
		}
		if err := s.SignHTTP(context.Background(), creds, hr, string(h[:]), SigningName, "us-east-1", fixed); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkSign4KBCachedKey(b *testing.B)  { benchSign(b, false) }
func BenchmarkSign4KBDerivedKey(b *testing.B) { benchSign(b, true) }

// BenchmarkBuildChat is a whole upstream request: conversion, URL, headers
// and signature.
func BenchmarkBuildChat(b *testing.B) {
	a := newAdapter(b, "", headers.Config{})
	body := []byte(`{"model":"x","stream":true,"messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"` + string(bytes.Repeat([]byte("a"), 3900)) + `"}]}`)
	in := &adapters.ChatInput{Body: body, UpstreamModel: "us.amazon.nova-micro-v1:0", Stream: true}
	req := fasthttp.AcquireRequest()
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		req.Reset()
		if err := a.BuildChat(req, in); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkInvokeSourceEvent is the per-event decode cost of the native
// Messages path: event-stream frame (both CRCs), the chunk's base64 and the
// event's type, over the recorded thinking stream in chunk frames.
func BenchmarkInvokeSourceEvent(b *testing.B) {
	fx, err := os.ReadFile("testdata/anthropic_thinking_then_text.sse")
	if err != nil {
		b.Fatal(err)
	}
	frames, _ := chunkFrames(b, fx)
	var rd bytes.Reader
	s := AcquireInvokeSource(nil)
	defer ReleaseInvokeSource(s)
	events := 0
	b.SetBytes(int64(len(frames)))
	b.ReportAllocs()
	for b.Loop() {
		rd.Reset(frames)
		s.Reset(&rd)
		for {
			if _, err := s.Next(); err != nil {
				break
			}
			events++
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(events), "ns/event")
}
