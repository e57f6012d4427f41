package resources

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

func exporterFile(entries string) string { return miscBase + "observability_exporters:\n" + entries }

const ddKey = `api_key: "${DD_API_KEY}"`

func TestExporterDefaults(t *testing.T) {
	r := miscOK(t, exporterFile(`  - {name: otel, kind: otlp_http, endpoint: "https://otel.example.com/v1/traces"}
  - {name: dd, kind: datadog, `+ddKey+`}
  - {name: gcs, kind: object_store, provider: gcs, bucket: gw-usage}
`))
	o, dd, g := r.ObservabilityExporters[0], r.ObservabilityExporters[1], r.ObservabilityExporters[2]
	if o.ID != DeriveID(KindObservabilityExporter, "otel") || !o.Enabled || o.BatchSize != 512 || o.FlushInterval() != 5*time.Second ||
		o.OTLP == nil || o.OTLP.TimeoutMS != 10000 || o.OTLP.Compression != "none" || o.ObjectStore != nil || o.SLS != nil || o.Datadog != nil {
		t.Fatalf("got %+v", o)
	}
	if dd.Datadog.Site != "datadoghq.com" || dd.Datadog.Service != "gw" || dd.Datadog.APIKey.Reveal() != "dd-test" {
		t.Fatalf("got %+v", dd.Datadog)
	}
	if g.ObjectStore.AuthMode != AuthModeCloudIdentity || g.ObjectStore.Endpoint != "" || g.ObjectStore.AccessKeyID.IsSet() || g.ObjectStore.Compression != CompressionNone {
		t.Fatalf("got %+v", g.ObjectStore)
	}
}

func TestExporterKinds(t *testing.T) {
	r := miscOK(t, miscBase+fullMiscExample)
	var s3, sls *ObservabilityExporter
	for _, x := range r.ObservabilityExporters {
		switch x.Kind {
		case ExporterObjectStore:
			s3 = x
		case ExporterSLS:
			sls = x
		}
	}
	if os := s3.ObjectStore; os.Provider != "s3" || os.Region != "eu-west-1" || os.Prefix != "events/" || os.SecretAccessKey.Reveal() != "aws-secret" ||
		os.AccessKeyID.Reveal() != "AKIATEST" || os.Compression != CompressionGzip || s3.BatchSize != 2000 || s3.FlushIntervalMS != 60000 {
		t.Fatalf("got %+v", os)
	}
	if x := sls.SLS; x.Project != "gw-prod" || x.Logstore != "usage" || x.AccessKeySecret.Reveal() != "sls-secret" {
		t.Fatalf("got %+v", x)
	}
	for _, x := range r.ObservabilityExporters {
		for _, s := range []string{fmt.Sprintf("%+v", x), fmt.Sprintf("%+v", x.ObjectStore), fmt.Sprintf("%+v", x.SLS), fmt.Sprintf("%+v", x.Datadog), fmt.Sprintf("%+v", x.OTLP)} {
			for _, secret := range []string{"aws-secret", "sls-secret", "dd-test", "otlp-token"} {
				if strings.Contains(s, secret) {
					t.Fatalf("exporter %s prints a credential", x.Name)
				}
			}
		}
	}
}

func TestExporterURLRules(t *testing.T) {
	f := func(u, want string) {
		t.Helper()
		if got := CheckExporterURL(u); got != want {
			t.Errorf("CheckExporterURL(%q): got %q; want %q", u, got, want)
		}
	}
	f("https://otel.example.com/v1/traces", "")
	f("http://127.0.0.1:4318/v1/traces", "")
	f("http://user:pw@collector:4318/v1/traces", "") // user-info accepted
	f("HTTPS://otel.example.com", "URL scheme must be lowercase")
	f("Http://127.0.0.1:4318", "URL scheme must be lowercase")
	f("otel.example.com:4318", "must be an absolute http or https URL")
	f("ftp://otel.example.com", "must be an absolute http or https URL (scheme http or https)")
	f("http://127.0.0.1:/x", "empty port after a loopback http host; give a port or drop the ':'")
	f("http://localhost:", "empty port after a loopback http host; give a port or drop the ':'")
	f("http://[::1]:/v1/traces", "empty port after a loopback http host; give a port or drop the ':'")
	f("http://127.0.0.1?", "empty query ('?') after a loopback http host; remove it")
	f("http://127.0.0.2/v1/traces?", "empty query ('?') after a loopback http host; remove it")
	f("http://localhost#", "empty fragment ('#') after a loopback http host; remove it")
	f("http://localhost:4318/#", "empty fragment ('#') after a loopback http host; remove it")
	f("http://127.0.0.1/#x", "must not have a fragment")
	// Only loopback http hosts carry the empty-part rules.
	f("http://collector.internal:/x", "")
	f("https://127.0.0.1:/x", "")
}

func TestExporterRejections(t *testing.T) {
	f := func(entry, want string) {
		t.Helper()
		miscErrLine(t, exporterFile(entry), want)
	}
	at := "observability_exporters[0] (name=x): "
	f("  - {name: x}\n", at+"kind: required; one of otlp_http, object_store, sls, datadog")
	// An unknown kind is the one error: kind fields do not cascade.
	r := miscLoad(exporterFile("  - {name: x, kind: kafka, endpoint: https://k.example, bucket: b}\n"))
	if len(r.Errors) != 1 || r.Errors[0].String() != at+`kind: unknown value "kafka"; allowed: otlp_http, object_store, sls, datadog` {
		t.Fatalf("got:\n%s", miscLines(r.Errors))
	}
	f("  - {name: x, kind: datadog, "+ddKey+", endpoint: https://x.example}\n", at+"endpoint: not accepted for kind datadog")
	f("  - {name: x, kind: otlp_http, endpoint: https://x.example, bucket: b}\n", at+"bucket: not accepted for kind otlp_http")
	f("  - {name: x, kind: datadog, "+ddKey+", batch_size: 0}\n", at+"batch_size: must be between 1 and 8192, got 0")
	f("  - {name: x, kind: datadog, "+ddKey+", batch_size: 8193}\n", at+"batch_size: must be between 1 and 8192, got 8193")
	f("  - {name: x, kind: datadog, "+ddKey+", flush_interval_ms: 99}\n", at+"flush_interval_ms: must be between 100 and 600000, got 99")
	f("  - {name: x, kind: datadog, "+ddKey+", enabled: 0}\n", at+"enabled: must be a boolean, got an integer")

	// otlp_http
	f("  - {name: x, kind: otlp_http}\n", at+"endpoint: required")
	f("  - {name: x, kind: otlp_http, endpoint: \"HTTP://127.0.0.1:4318\"}\n", at+"endpoint: URL scheme must be lowercase")
	f("  - {name: x, kind: otlp_http, endpoint: \"http://127.0.0.1:/v1/traces\"}\n", at+"endpoint: empty port after a loopback http host; give a port or drop the ':'")
	f("  - {name: x, kind: otlp_http, endpoint: \"http://127.0.0.1?\"}\n", at+"endpoint: empty query ('?') after a loopback http host; remove it")
	f("  - {name: x, kind: otlp_http, endpoint: \"http://127.0.0.1#\"}\n", at+"endpoint: empty fragment ('#') after a loopback http host; remove it")
	f("  - {name: x, kind: otlp_http, endpoint: https://x.example, compression: zstd}\n", at+`compression: unknown value "zstd"; allowed: none, gzip`)
	f("  - {name: x, kind: otlp_http, endpoint: https://x.example, timeout_ms: 0}\n", at+"timeout_ms: must be between 1 and 9223372036854775807, got 0")
	f("  - {name: x, kind: otlp_http, endpoint: https://x.example, headers: {host: x}}\n", at+"headers.host: header is set by the gateway and cannot be configured (host, hop-by-hop, x-gw-*, content-type, content-length)")

	// object_store
	os := "  - {name: x, kind: object_store, "
	f(os+"bucket: b1b}\n", at+"provider: required; one of gcs, s3")
	f(os+"provider: azure, bucket: b1b}\n", at+`provider: unknown value "azure"; allowed: gcs, s3`)
	f(os+"provider: s3, bucket: b1b, compression: zstd}\n", at+`compression: unknown value "zstd"; allowed: none, gzip`)
	f(os+"provider: s3}\n", at+"bucket: required")
	f(os+"provider: s3, bucket: My_Bucket}\n", at+"bucket: must be a bucket name: 3 to 63 lowercase letters, digits, '.', '_' or '-', starting and ending with a letter or digit")
	f(os+"provider: s3, bucket: b1b, prefix: /events}\n", at+"prefix: must not start with '/' (object keys are relative to the bucket)")
	f(os+"provider: s3, bucket: b1b, auth_mode: static}\n", at+"access_key_id: required; supply it as ${VAR}")
	f(os+"provider: s3, bucket: b1b, auth_mode: static, access_key_id: \"${AWS_KEY_ID}\"}\n", at+"secret_access_key: required; supply it as ${VAR}")
	f(os+"provider: s3, bucket: b1b, access_key_id: \"${AWS_KEY_ID}\"}\n", at+"access_key_id: accepted only with auth_mode static (cloud_identity uses the workload's own identity)")
	f(os+"provider: s3, bucket: b1b, auth_mode: iam}\n", at+`auth_mode: unknown value "iam"; allowed: cloud_identity, static`)
	f(os+"provider: gcs, bucket: b1b, region: us}\n", at+"region: accepted only for provider s3")
	f(os+"provider: s3, bucket: b1b, endpoint: \"HTTPS://minio.example\"}\n", at+"endpoint: URL scheme must be lowercase")
	// gcs endpoint: https, or http to a loopback host; never with cloud_identity.
	st := ", auth_mode: static, access_key_id: \"${AWS_KEY_ID}\", secret_access_key: \"${AWS_SECRET}\"}\n"
	f(os+"provider: gcs, bucket: b1b, endpoint: http://gcs.internal:4443"+st, at+"endpoint: gcs endpoint must use https, or http to a loopback host")
	f(os+"provider: gcs, bucket: b1b, endpoint: https://storage.example.com}\n", at+"endpoint: gcs endpoint is not allowed with auth_mode cloud_identity; set auth_mode: static")
	f(os+"provider: gcs, bucket: b1b, auth_mode: cloud_identity, endpoint: http://127.0.0.1:4443}\n", at+"endpoint: gcs endpoint is not allowed with auth_mode cloud_identity; set auth_mode: static")
	f(os+"provider: gcs, bucket: b1b, endpoint: \"http://127.0.0.1:/storage\""+st, at+"endpoint: empty port after a loopback http host; give a port or drop the ':'")
	miscOK(t, exporterFile(os+"provider: gcs, bucket: b1b, endpoint: http://127.0.0.1:4443"+st))
	miscOK(t, exporterFile(os+"provider: gcs, bucket: b1b, endpoint: https://storage.example.com"+st))
	// s3-compatible stores may use plain http anywhere.
	miscOK(t, exporterFile(os+"provider: s3, bucket: b1b, endpoint: http://minio.internal:9000"+st))

	// sls
	sl := "  - {name: x, kind: sls, endpoint: https://cn-hangzhou.log.aliyuncs.com, "
	f("  - {name: x, kind: sls, project: gw-prod, logstore: usage, access_key_id: a, access_key_secret: \"${SLS_SECRET}\"}\n", at+"endpoint: required")
	f(sl+"logstore: usage, access_key_id: a, access_key_secret: \"${SLS_SECRET}\"}\n", at+"project: required")
	f(sl+"project: GW, logstore: usage, access_key_id: a, access_key_secret: \"${SLS_SECRET}\"}\n", at+"project: must be 3 to 128 lowercase letters, digits, '_' or '-', starting and ending with a letter or digit")
	f(sl+"project: gw-prod, access_key_id: a, access_key_secret: \"${SLS_SECRET}\"}\n", at+"logstore: required")
	f(sl+"project: gw-prod, logstore: usage, access_key_secret: \"${SLS_SECRET}\"}\n", at+"access_key_id: required; supply it as ${VAR}")
	f(sl+"project: gw-prod, logstore: usage, access_key_id: a}\n", at+"access_key_secret: required; supply it as ${VAR}")
	f(sl+"project: gw-prod, logstore: usage, access_key_id: a, access_key_secret: \"\"}\n", at+"access_key_secret: must not be empty")

	// datadog
	f("  - {name: x, kind: datadog}\n", at+"api_key: required; supply it as ${VAR}")
	f("  - {name: x, kind: datadog, "+ddKey+", site: \"https://datadoghq.com\"}\n", at+"site: must be a Datadog site host such as datadoghq.com or datadoghq.eu (no scheme or path)")
	f("  - {name: x, kind: datadog, "+ddKey+", service: \" \"}\n", at+"service: must not be empty")
}

func TestExporterLiteralCredentialWarnings(t *testing.T) {
	w := func(entry, want string) {
		t.Helper()
		miscWarnLine(t, exporterFile(entry), want)
	}
	at := "observability_exporters[0] (name=x): "
	w("  - {name: x, kind: datadog, api_key: literal}\n", at+"api_key: credential written literally; supply it as ${VAR} so it stays out of the file")
	w("  - {name: x, kind: sls, endpoint: https://cn-hangzhou.log.aliyuncs.com, project: gw-prod, logstore: usage, access_key_id: a, access_key_secret: literal}\n",
		at+"access_key_secret: credential written literally; supply it as ${VAR} so it stays out of the file")
	w("  - {name: x, kind: otlp_http, endpoint: https://x.example, headers: {x-api-key: literal}}\n",
		at+"headers.x-api-key: credential written literally; supply it as ${VAR} so it stays out of the file")
	// Access key IDs are identifiers: no warning.
	miscNoWarn(t, exporterFile("  - {name: x, kind: sls, endpoint: https://cn-hangzhou.log.aliyuncs.com, project: gw-prod, logstore: usage, access_key_id: a, access_key_secret: \"${SLS_SECRET}\"}\n"))
}
