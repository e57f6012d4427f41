package exporters_test

import (
	"strings"
	"testing"

	"gw/admin/resources"
	"gw/edge/usage/exporters"
)

func load(t *testing.T, src string) []*resources.ObservabilityExporter {
	t.Helper()
	r := resources.Load([]byte(src), func(k string) (string, bool) { return "secret-" + k, true })
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	return r.Resources.ObservabilityExporters
}

const file = `_format_version: "1"
observability_exporters:
  - {name: o, kind: otlp_http, endpoint: "http://127.0.0.1:4318/v1/traces", headers: {authorization: "${TOK}"}}
  - {name: s3, kind: object_store, provider: s3, bucket: b-1, auth_mode: static, access_key_id: "${K}", secret_access_key: "${S}"}
  - {name: gcs, kind: object_store, provider: gcs, bucket: b-2}
  - {name: dd, kind: datadog, api_key: "${DD}", batch_size: 5000}
  - {name: sls, kind: sls, endpoint: "https://cn-hangzhou.log.aliyuncs.com", project: proj, logstore: store, access_key_id: "${A}", access_key_secret: "${B}"}
  - {name: off, kind: otlp_http, endpoint: "http://127.0.0.1:4318/v1/traces", enabled: false}
`

// TestSpecs: every kind builds its sink (no network on build); disabled
// exporters get none; Datadog batches are capped at the intake's limit.
func TestSpecs(t *testing.T) {
	specs := exporters.Specs(load(t, file))
	if len(specs) != 5 {
		t.Fatalf("%d sinks; want 5", len(specs))
	}
	for _, s := range specs {
		if _, err := s.Build(); err != nil {
			t.Fatalf("%s: %v", s.Config.Name, err)
		}
		if !strings.HasPrefix(s.Config.Name, "exporter:") || s.Config.Retry.Budget == 0 || s.Config.FlushInterval == 0 {
			t.Fatalf("config %+v", s.Config)
		}
		if s.Config.Kind == resources.ExporterDatadog && s.Config.BatchSize != 1000 {
			t.Fatalf("datadog batch %d; want the intake's 1000", s.Config.BatchSize)
		}
	}
	for _, k := range resources.ExporterKinds {
		if !exporters.Built(k) {
			t.Fatalf("kind %s has no sink", k)
		}
	}
}

// TestFingerprint: a rotated credential changes the fingerprint (the sink
// is rebuilt); the fingerprint never contains the credential.
func TestFingerprint(t *testing.T) {
	a := load(t, file)[0]
	b := load(t, strings.Replace(file, `"${TOK}"`, `"${TOK2}"`, 1))[0]
	fa, fb := exporters.Fingerprint(a), exporters.Fingerprint(b)
	if fa == fb {
		t.Fatal("a changed header value kept the fingerprint")
	}
	if fa != exporters.Fingerprint(load(t, file)[0]) {
		t.Fatal("fingerprint is not stable")
	}
	if strings.Contains(fa, "secret-") {
		t.Fatal("fingerprint holds the credential")
	}
}
