package objstore_test

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"gw/admin/resources"
	"gw/edge/usage"
	"gw/edge/usage/objstore"
	"gw/edge/usage/usagetest"
)

func s3Config(s3 *usagetest.S3Server) *resources.ObjectStoreExporter {
	return &resources.ObjectStoreExporter{Provider: resources.ObjectStoreS3, Bucket: s3.Bucket, Prefix: "events", Endpoint: s3.Endpoint,
		Region: "us-east-1", AuthMode: resources.AuthModeStatic,
		AccessKeyID: resources.NewSecret(usagetest.S3Key), SecretAccessKey: resources.NewSecret(usagetest.S3Secret)}
}

func records(objs map[string][]byte) int {
	n := 0
	for _, b := range objs {
		n += bytes.Count(b, []byte("\n"))
	}
	return n
}

// TestObjectStoreS3: batches land as NDJSON objects under the prefix with
// time-partitioned names; every line validates against the schema. With
// compression: gzip each is a .ndjson.gz object stored with
// Content-Encoding: gzip whose inflated lines are the batch's records.
func TestObjectStoreS3(t *testing.T) {
	for _, tc := range []struct{ compression, suffix, encoding string }{
		{resources.CompressionNone, ".ndjson", ""},
		{resources.CompressionGzip, ".ndjson.gz", "gzip"},
	} {
		t.Run(tc.compression, func(t *testing.T) {
			s3 := usagetest.StartS3(t, "gw-usage")
			cfg := s3Config(s3)
			cfg.Compression = tc.compression
			sink, err := objstore.New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			p := usagetest.Pipeline(t, "object_store", 10, usage.ExporterPolicy, nil, sink)
			for i := 0; i < 25; i++ {
				p.Emit(usagetest.Record(i))
			}
			var objs map[string][]byte
			usagetest.Eventually(t, 10*time.Second, "3 objects in the bucket", func() bool { objs = s3.Objects(t); return len(objs) == 3 })
			day := time.Now().UTC().Format("dt=2006-01-02/hour=")
			n := 0
			for k, b := range objs {
				if !strings.HasPrefix(k, "events/"+day) || !strings.HasSuffix(k, tc.suffix) {
					t.Fatalf("object name %q", k)
				}
				if enc := s3.ContentEncoding(t, k); enc != tc.encoding {
					t.Fatalf("%s stored with Content-Encoding %q; want %q", k, enc, tc.encoding)
				}
				if tc.encoding == "gzip" {
					b = usagetest.Gunzip(t, b)
				}
				usagetest.ValidateNDJSON(t, b)
				n += bytes.Count(b, []byte("\n"))
			}
			if n != 25 {
				t.Fatalf("%d records in the objects; want 25", n)
			}
		})
	}
}

// TestObjectStoreOutage: the server is down, the batch is retried, and it
// lands once the server is back (within the 5-minute budget).
func TestObjectStoreOutage(t *testing.T) {
	s3 := usagetest.StartS3(t, "gw-usage")
	sink, err := objstore.New(s3Config(s3))
	if err != nil {
		t.Fatal(err)
	}
	p := usagetest.Pipeline(t, "object_store", 5, usage.ExporterPolicy, nil, sink)
	s3.Kill()
	for i := 0; i < 5; i++ {
		p.Emit(usagetest.Record(i))
	}
	usagetest.Eventually(t, 10*time.Second, "a failed send", func() bool { return p.Status()[0].FailedBatches >= 2 })
	if st := p.Status()[0]; !strings.Contains(st.LastError, "cannot reach the object store") || st.LastFailureUnix == 0 {
		t.Fatalf("status %+v", st)
	}
	s3.Restart()
	usagetest.Eventually(t, 15*time.Second, "delivery after recovery", func() bool { return records(s3.Objects(t)) == 5 })
	if st := p.Status()[0]; st.DroppedEvents != 0 || st.SentEvents != 5 {
		t.Fatalf("status %+v", st)
	}
}

func TestObjectName(t *testing.T) {
	b := &usage.Batch{ID: "b-1", Oldest: time.Date(2026, 11, 25, 17, 5, 46, 123e6, time.FixedZone("x", 3600))}
	f := func(prefix, want string) {
		t.Helper()
		if got := objstore.ObjectName(prefix, b); got != want {
			t.Fatalf("ObjectName(%q) = %q; want %q", prefix, got, want)
		}
	}
	f("", "dt=2026-11-25/hour=16/20261125T160546.123Z-b-1.ndjson")
	f("events", "events/dt=2026-11-25/hour=16/20261125T160546.123Z-b-1.ndjson")
	f("events/", "events/dt=2026-11-25/hour=16/20261125T160546.123Z-b-1.ndjson")
}

// TestObjectStoreGCSCloudIdentity: a gcs exporter with auth_mode
// cloud_identity finds Application Default Credentials (a service-account
// key file), gets an access token by the JWT-bearer grant and uploads each
// batch through the JSON API to a real emulator (fake-gcs-server, reached
// through STORAGE_EMULATOR_HOST) that refuses requests without that token.
func TestObjectStoreGCSCloudIdentity(t *testing.T) {
	g := usagetest.StartGCS(t, "gw-usage")
	t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", g.CredentialsFile)
	t.Setenv("STORAGE_EMULATOR_HOST", g.Host)
	// One exporter writes plain objects, one gzip objects (the upload's
	// contentEncoding parameter), through the same identity.
	plain, err := objstore.New(&resources.ObjectStoreExporter{Provider: resources.ObjectStoreGCS, Bucket: g.Bucket, Prefix: "events",
		AuthMode: resources.AuthModeCloudIdentity})
	if err != nil {
		t.Fatal(err)
	}
	gz, err := objstore.New(&resources.ObjectStoreExporter{Provider: resources.ObjectStoreGCS, Bucket: g.Bucket, Prefix: "gz",
		AuthMode: resources.AuthModeCloudIdentity, Compression: resources.CompressionGzip})
	if err != nil {
		t.Fatal(err)
	}
	for _, sink := range []*objstore.Sink{plain, gz} {
		p := usagetest.Pipeline(t, "object_store", 10, usage.ExporterPolicy, nil, sink)
		for i := 0; i < 25; i++ {
			p.Emit(usagetest.Record(i))
		}
	}
	var objs map[string][]byte
	usagetest.Eventually(t, 15*time.Second, "6 objects in the bucket", func() bool { objs = g.Objects(t); return len(objs) == 6 })
	n := map[string]int{}
	for k, b := range objs {
		switch {
		case strings.HasPrefix(k, "events/dt=") && strings.HasSuffix(k, ".ndjson"):
		case strings.HasPrefix(k, "gz/dt=") && strings.HasSuffix(k, ".ndjson.gz"):
			// Stored as gzip; Objects' client inflates it on the way.
			if enc := g.ContentEncoding(t, k); enc != "gzip" {
				t.Fatalf("%s stored with contentEncoding %q", k, enc)
			}
		default:
			t.Fatalf("object name %q", k)
		}
		usagetest.ValidateNDJSON(t, b)
		n[k[:strings.IndexByte(k, '/')]] += bytes.Count(b, []byte("\n"))
	}
	if n["events"] != 25 || n["gz"] != 25 {
		t.Fatalf("records per exporter %v; want 25 each", n)
	}
	if g.Grants() != 2 || g.Denied() != 0 {
		t.Fatalf("%d token grants, %d refused requests; want one token per exporter, reused for every upload", g.Grants(), g.Denied())
	}
}
