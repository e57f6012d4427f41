// Package objstore exports usage records as newline-delimited JSON objects
// to an S3-compatible bucket (minio-go) or to Google Cloud Storage: with
// static HMAC keys through GCS's S3-interoperable XML API, with the
// workload's identity (Application Default Credentials) through the GCS
// JSON upload API.
//
// Object names are time-partitioned by the batch's oldest event and end
// with the batch ID, so a resent batch overwrites its own object instead
// of writing a duplicate:
//
//	<prefix>/dt=2026-11-25/hour=17/20261125T170546.123Z-<batch-id>.ndjson
package objstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/google"

	"gw/admin/resources"
	"gw/edge/usage"
)

// Public endpoints.
const (
	S3Endpoint  = "https://s3.amazonaws.com"
	GCSEndpoint = "https://storage.googleapis.com"
	// gcsScope is the narrowest scope that can create objects.
	gcsScope = "https://www.googleapis.com/auth/devstorage.read_write"
)

// Sink writes each batch as one object.
type Sink struct {
	cfg *resources.ObjectStoreExporter
	put func(ctx context.Context, name string, body []byte) error
}

var _ usage.Sink = (*Sink)(nil)

// New builds the sink of one object_store exporter. No request is made
// here; credentials of the identity chain are looked up on the first send.
func New(cfg *resources.ObjectStoreExporter) (*Sink, error) {
	s := &Sink{cfg: cfg}
	if cfg.Provider == resources.ObjectStoreGCS && cfg.AuthMode == resources.AuthModeCloudIdentity {
		s.put = gcsJSONPut(cfg)
		return s, nil
	}
	ep := cfg.Endpoint
	if ep == "" {
		ep = S3Endpoint
		if cfg.Provider == resources.ObjectStoreGCS {
			ep = GCSEndpoint
		}
	}
	u, err := url.Parse(ep)
	if err != nil || u.Host == "" {
		return nil, errors.New("cannot use the object store endpoint: not an absolute URL")
	}
	var creds *credentials.Credentials
	if cfg.AuthMode == resources.AuthModeStatic {
		creds = credentials.NewStaticV4(cfg.AccessKeyID.Reveal(), cfg.SecretAccessKey.Reveal(), "")
	} else {
		// The AWS identity chain: environment, shared credentials file,
		// then web identity / ECS / instance metadata.
		creds = credentials.NewChainCredentials([]credentials.Provider{
			&credentials.EnvAWS{}, &credentials.FileAWSCredentials{}, &credentials.IAM{Client: &http.Client{Timeout: 10 * time.Second}},
		})
	}
	region := cfg.Region
	if cfg.Provider == resources.ObjectStoreGCS {
		region = "auto"
	}
	mc, err := minio.New(u.Host, &minio.Options{Creds: creds, Secure: u.Scheme == "https", Region: region,
		MaxRetries: 1, // the pipeline owns retries and their budget
	})
	if err != nil {
		return nil, fmt.Errorf("cannot create the S3 client: %w", err)
	}
	s.put = func(ctx context.Context, name string, body []byte) error {
		_, err := mc.PutObject(ctx, cfg.Bucket, name, bytes.NewReader(body), int64(len(body)),
			minio.PutObjectOptions{ContentType: "application/x-ndjson", DisableMultipart: true,
				// One plain signed PUT with Content-MD5 (no aws-chunked streaming
				// signature), which every S3-compatible store reads.
				DisableContentSha256: true, SendContentMd5: true})
		if err == nil {
			return nil
		}
		er := minio.ToErrorResponse(err)
		if er.StatusCode == 0 {
			return &usage.SendError{Msg: "cannot reach the object store: " + usage.NetReason(err)}
		}
		return classify(er.StatusCode, er.Code)
	}
	return s, nil
}

// classify turns an object store status into a send error: throttling and
// server errors are retried; a missing bucket or refused credentials
// cannot heal by resending the same batch, but an operator can fix them
// within the retry window, so 403/404 are retried too. Only 400-class
// request errors are permanent.
func classify(status int, code string) error {
	se := &usage.SendError{Status: status, Msg: code}
	switch {
	case status == http.StatusRequestTimeout || status == http.StatusTooManyRequests || status >= 500,
		status == http.StatusForbidden || status == http.StatusNotFound || status == http.StatusUnauthorized:
	default:
		se.Permanent = true
	}
	return se
}

// Encode writes the batch as NDJSON.
func (s *Sink) Encode(dst []byte, batch []usage.Record) ([]byte, error) {
	return usage.AppendNDJSON(dst, batch), nil
}

// Send writes the batch's object.
func (s *Sink) Send(ctx context.Context, b *usage.Batch) error {
	return s.put(ctx, ObjectName(s.cfg.Prefix, b), b.Payload)
}

// ObjectName is the batch's object key under prefix.
func ObjectName(prefix string, b *usage.Batch) string {
	t := b.Oldest.UTC()
	var sb strings.Builder
	if prefix != "" {
		sb.WriteString(prefix)
		if !strings.HasSuffix(prefix, "/") {
			sb.WriteByte('/')
		}
	}
	sb.WriteString(t.Format("dt=2006-01-02/hour=15/20060102T150405.000Z"))
	sb.WriteByte('-')
	sb.WriteString(b.ID)
	sb.WriteString(".ndjson")
	return sb.String()
}

// gcsJSONPut uploads through the GCS JSON API with Application Default
// Credentials (GOOGLE_APPLICATION_CREDENTIALS, gcloud, or the metadata
// server of the workload).
func gcsJSONPut(cfg *resources.ObjectStoreExporter) func(context.Context, string, []byte) error {
	var ts oauth2.TokenSource
	client := &http.Client{Timeout: 30 * time.Second}
	base := GCSEndpoint
	if h := os.Getenv("STORAGE_EMULATOR_HOST"); h != "" {
		// Google's client libraries' convention for an emulator
		// (fake-gcs-server): uploads go there. Unlike those libraries gw
		// still sends the identity's token, so the emulator path
		// exercises the same credential chain as production.
		base = strings.TrimSuffix(h, "/")
		if !strings.Contains(base, "://") {
			base = "http://" + base
		}
	}
	return func(ctx context.Context, name string, body []byte) error {
		if ts == nil {
			creds, err := google.FindDefaultCredentials(ctx, gcsScope)
			if err != nil {
				return &usage.SendError{Msg: "no Google Cloud identity found (Application Default Credentials)"}
			}
			ts = creds.TokenSource
		}
		tok, err := ts.Token()
		if err != nil {
			return &usage.SendError{Msg: "cannot get a Google Cloud access token"}
		}
		u := base + "/upload/storage/v1/b/" + url.PathEscape(cfg.Bucket) + "/o?uploadType=media&name=" + url.QueryEscape(name)
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(body))
		if err != nil {
			return &usage.SendError{Permanent: true, Msg: "cannot build the upload request"}
		}
		req.Header.Set("Content-Type", "application/x-ndjson")
		tok.SetAuthHeader(req)
		resp, err := client.Do(req)
		if err != nil {
			return &usage.SendError{Msg: "cannot reach Google Cloud Storage: " + usage.NetReason(err)}
		}
		defer resp.Body.Close()
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
		if resp.StatusCode >= 200 && resp.StatusCode < 300 {
			return nil
		}
		err = classify(resp.StatusCode, usage.ErrorSnippet(msg))
		if se := (*usage.SendError)(nil); errors.As(err, &se) && !se.Permanent {
			se.RetryAfter = usage.ParseRetryAfter(resp.Header.Get("Retry-After"), time.Now())
		}
		return err
	}
}
