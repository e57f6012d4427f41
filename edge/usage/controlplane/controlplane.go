// Package controlplane delivers usage batches to the control plane:
// POST <url>/dp/telemetry over mutual TLS, the batch as NDJSON with its ID
// in X-Gw-Usage-Batch-Id. A failed batch is resent unchanged with the same
// ID until it is accepted, until its oldest event is 30 minutes old, or
// until 8 consecutive failures with a response; 422 drops it at once; a
// 503 (MTLS_UNAVAILABLE: the revocation list cannot be read) is retried.
package controlplane

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"gw/edge/usage"
)

// Delivery rules (spec "Events").
const (
	MaxAge              = 30 * time.Minute
	MaxResponseFailures = 8
	Path                = "/dp/telemetry"
	HeaderBatchID       = "X-Gw-Usage-Batch-Id"
	HeaderDedup         = "X-Gw-Usage-Batch-Dedup"
	// SinkName is the control plane's name on /status/exporters.
	SinkName = "control_plane"
)

// Policy is the control plane's retry rule.
var Policy = usage.RetryPolicy{MaxAge: MaxAge, MaxResponseFailures: MaxResponseFailures}

// Config is the control_plane startup setting.
type Config struct {
	URL        string // base URL, https
	ClientCert string // PEM file
	ClientKey  string // PEM file
	CACert     string // PEM file; "" trusts the system roots
}

// Sink posts batches to the control plane.
type Sink struct {
	usage.NDJSON
	url string
	hc  *http.Client
}

var _ usage.Sink = (*Sink)(nil)

// New loads the certificates and builds the mutual-TLS client.
func New(c Config) (*Sink, error) {
	if !strings.HasPrefix(c.URL, "https://") {
		return nil, errors.New("control_plane.url: must be an https URL (the control plane speaks mutual TLS)")
	}
	if c.ClientCert == "" || c.ClientKey == "" {
		return nil, errors.New("control_plane.client_cert and control_plane.client_key: required with control_plane.url")
	}
	cert, err := tls.LoadX509KeyPair(c.ClientCert, c.ClientKey)
	if err != nil {
		return nil, fmt.Errorf("cannot load the control-plane client certificate: %w", err)
	}
	tc := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	if c.CACert != "" {
		pem, err := os.ReadFile(c.CACert)
		if err != nil {
			return nil, fmt.Errorf("cannot read control_plane.ca_cert: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, errors.New("control_plane.ca_cert: no PEM certificate in the file")
		}
		tc.RootCAs = pool
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = tc
	return &Sink{url: strings.TrimSuffix(c.URL, "/") + Path, hc: &http.Client{Transport: tr, Timeout: 30 * time.Second}}, nil
}

// Send posts one batch.
func (s *Sink) Send(ctx context.Context, b *usage.Batch) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.url, bytes.NewReader(b.Payload))
	if err != nil {
		return &usage.SendError{Permanent: true, Msg: "cannot build the telemetry request"}
	}
	req.Header.Set("Content-Type", "application/x-ndjson")
	req.Header.Set(HeaderBatchID, b.ID)
	resp, err := s.hc.Do(req)
	if err != nil {
		return &usage.SendError{Msg: "cannot reach the control plane: " + usage.NetReason(err)}
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	return Classify(resp.StatusCode, resp.Header, body, b.Count)
}

// Classify applies the delivery rules to one answer.
func Classify(status int, h http.Header, body []byte, n int) error {
	switch {
	case status >= 200 && status < 300:
		return nil
	case status == http.StatusUnprocessableEntity:
		// The batch can never be stored: resending cannot help.
		return &usage.SendError{Status: status, Permanent: true, Rejected: n, Msg: usage.ErrorSnippet(body)}
	default:
		// 503 MTLS_UNAVAILABLE and every other failure: resend the same
		// batch (the 8-failure and 30-minute rules bound it).
		return &usage.SendError{Status: status, RetryAfter: usage.ParseRetryAfter(h.Get("Retry-After"), time.Now()), Msg: usage.ErrorSnippet(body)}
	}
}

// Spec is the control plane's sink for the pipeline. batchSize and flush
// follow the exporters' defaults.
func Spec(c Config, batchSize int, flush time.Duration) (*usage.SinkSpec, error) {
	s, err := New(c) // fail at startup on a bad setting, not on the first batch
	if err != nil {
		return nil, err
	}
	return &usage.SinkSpec{
		Config: usage.SinkConfig{Name: SinkName, Kind: SinkName, BatchSize: batchSize, FlushInterval: flush, Retry: Policy, Fingerprint: "startup"},
		Build:  func() (usage.Sink, error) { return s, nil },
	}, nil
}
