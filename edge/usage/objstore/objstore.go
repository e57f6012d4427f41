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
//
// With compression: gzip the object is the gzip of those lines, named
// .ndjson.gz and stored with Content-Encoding: gzip. It is written by
// gzipdelta, each line against the one before: records of one gateway
// repeat each other member by member, so a batch shrinks to about a
// tenth at a fraction of a general compressor's CPU, and the upload
// (bytes copied, checksummed and sent) shrinks with it.
package objstore

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
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
	"gw/edge/usage/gzipdelta"
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
	usage.NDJSON
	cfg *resources.ObjectStoreExporter
	put func(ctx context.Context, name string, body []byte) error
	gz  bool // compression: gzip
	// The worker's, which alone calls AppendRecord and Finish.
	lines usage.LineEncoder
	z     gzipdelta.Lines
}

// AppendRecord appends r's line; with gzip, compressed as it is written
// (the parts unchanged from the line before copied and referred back to
// whole: usage.LineEncoder) and the lines before it dropped from body
// (gzipdelta.Lines).
func (s *Sink) AppendRecord(body []byte, r *usage.Record) []byte {
	if !s.gz {
		return s.NDJSON.AppendRecord(body, r)
	}
	c := len(body)
	body, parts := s.lines.Append(body, r)
	return s.z.AddParts(body, c, parts)
}

// Finish returns the object's bytes: the lines, or their gzip.
func (s *Sink) Finish(dst, body []byte, n int) ([]byte, error) {
	if !s.gz {
		return s.NDJSON.Finish(dst, body, n)
	}
	return s.z.Finish(dst, body), nil
}

var _ usage.Sink = (*Sink)(nil)

// New builds the sink of one object_store exporter. No request is made
// here; credentials of the identity chain are looked up on the first send.
func New(cfg *resources.ObjectStoreExporter) (*Sink, error) {
	s := &Sink{cfg: cfg, gz: cfg.Compression == resources.CompressionGzip}
	if cfg.Provider == resources.ObjectStoreGCS && cfg.AuthMode == resources.AuthModeCloudIdentity {
		s.put = gcsJSONPut(cfg, s.gz)
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
	gcs := cfg.Provider == resources.ObjectStoreGCS
	client := func(trailing bool) (*minio.Client, error) {
		tr, err := minio.DefaultTransport(u.Scheme == "https")
		if err != nil {
			return nil, err
		}
		tr.WriteBufferSize = usage.BatchWriteBuffer // see usage.Transport
		return minio.New(u.Host, &minio.Options{Creds: creds, Secure: u.Scheme == "https", Region: region, Transport: tr,
			MaxRetries: 1, // the pipeline owns retries and their budget
			// minio-go accepts a caller's x-amz-checksum-* header only on
			// a client with trailing headers on; with a known size and no
			// multipart it still sends one plain PUT, the checksum a
			// header. Such a client also adds x-amz-checksum-algorithm to
			// an upload without one, so Content-MD5 uploads use a client
			// without them: exactly the request gw sent before.
			TrailingHeaders: trailing,
		})
	}
	md5Client, err := client(false)
	if err != nil {
		return nil, fmt.Errorf("cannot create the S3 client: %w", err)
	}
	crcClient := md5Client
	if !gcs {
		if crcClient, err = client(true); err != nil {
			return nil, fmt.Errorf("cannot create the S3 client: %w", err)
		}
	}
	up := &s3Uploader{crc: crcClient, plain: md5Client, bucket: cfg.Bucket, md5: gcs}
	if s.gz {
		up.encoding = "gzip"
	}
	s.put = up.put
	return s, nil
}

// s3Uploader writes objects through minio-go with one plain signed PUT (no
// aws-chunked streaming signature), which every S3-compatible store reads.
//
// The body's integrity header is an x-amz-checksum-crc32c (hardware CRC,
// about 40× cheaper than MD5; MD5 of the NDJSON was the largest single
// cost of exporting under load). Amazon S3 accepts it everywhere,
// Object Lock buckets included ("Content-MD5 OR x-amz-checksum-"), and
// MinIO verifies it. GCS's XML API knows only Content-MD5, so a gcs
// provider sends that; so does a store that answers a CRC-only upload
// with a 400 asking for Content-MD5 — from then on, for this sink.
type s3Uploader struct {
	crc      *minio.Client // trailing headers on: takes x-amz-checksum-crc32c
	plain    *minio.Client // for Content-MD5
	bucket   string
	md5      bool // Content-MD5 instead of x-amz-checksum-crc32c
	meta     map[string]string
	encoding string // the objects' Content-Encoding ("gzip" or none)
}

func (u *s3Uploader) put(ctx context.Context, name string, body []byte) error {
	err := u.putOnce(ctx, name, body)
	if err != nil && !u.md5 && wantsMD5(err) {
		u.md5 = true
		err = u.putOnce(ctx, name, body)
	}
	if err == nil {
		return nil
	}
	er := minio.ToErrorResponse(err)
	if er.StatusCode == 0 {
		return &usage.SendError{Msg: "cannot reach the object store: " + usage.NetReason(err)}
	}
	return classify(er.StatusCode, er.Code)
}

func (u *s3Uploader) putOnce(ctx context.Context, name string, body []byte) error {
	opts := minio.PutObjectOptions{ContentType: "application/x-ndjson", ContentEncoding: u.encoding, DisableMultipart: true, DisableContentSha256: true}
	mc := u.crc
	if u.md5 {
		opts.SendContentMd5 = true
		mc = u.plain
	} else {
		if u.meta == nil {
			u.meta = make(map[string]string, 1)
		}
		u.meta[ChecksumHeader] = CRC32C(body)
		opts.UserMetadata = u.meta
	}
	_, err := mc.PutObject(ctx, u.bucket, name, bytes.NewReader(body), int64(len(body)), opts)
	return err
}

// ChecksumHeader carries an object's CRC32C (base64 of the big-endian
// value), as Amazon S3 defines it.
const ChecksumHeader = "x-amz-checksum-crc32c"

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// CRC32C is body's x-amz-checksum-crc32c value.
func CRC32C(body []byte) string {
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], crc32.Checksum(body, castagnoli))
	return base64.StdEncoding.EncodeToString(b[:])
}

// wantsMD5 reports a store refusing an upload for want of Content-MD5
// (Amazon S3's InvalidRequest text, MinIO's MissingContentMD5).
func wantsMD5(err error) bool {
	er := minio.ToErrorResponse(err)
	return er.StatusCode == http.StatusBadRequest &&
		(er.Code == "MissingContentMD5" || strings.Contains(er.Message, "Content-MD5"))
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

// Send writes the batch's object.
func (s *Sink) Send(ctx context.Context, b *usage.Batch) error {
	name := ObjectName(s.cfg.Prefix, b)
	if s.gz {
		name += ".gz"
	}
	return s.put(ctx, name, b.Payload)
}

// ObjectName is the batch's object key under prefix (uncompressed: a
// gzip object adds .gz).
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
func gcsJSONPut(cfg *resources.ObjectStoreExporter, gz bool) func(context.Context, string, []byte) error {
	var ts oauth2.TokenSource
	client := &http.Client{Transport: usage.Transport(), Timeout: 30 * time.Second}
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
		if gz {
			// objects.insert's contentEncoding: the object is stored as
			// gzip, served decompressed to clients that do not accept it.
			u += "&contentEncoding=gzip"
		}
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
