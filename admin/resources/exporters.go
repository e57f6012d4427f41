package resources

// observability_exporters: export request telemetry (usage events) to
// external systems. Reference: docs/CONFIG.md.

import (
	"net/url"
	"strings"
	"time"
)

// Exporter kinds.
const (
	ExporterOTLPHTTP    = "otlp_http"
	ExporterObjectStore = "object_store"
	ExporterSLS         = "sls"
	ExporterDatadog     = "datadog"
)

// ExporterKinds lists the accepted kinds.
var ExporterKinds = []string{ExporterOTLPHTTP, ExporterObjectStore, ExporterSLS, ExporterDatadog}

// Object store providers and auth modes.
const (
	ObjectStoreGCS        = "gcs"
	ObjectStoreS3         = "s3"
	AuthModeCloudIdentity = "cloud_identity" // the workload's own identity (default)
	AuthModeStatic        = "static"         // access_key_id + secret_access_key
)

// Compression values of otlp_http and object_store.
const (
	CompressionNone = "none"
	CompressionGzip = "gzip"

	OTLPCompressionNone = CompressionNone
	OTLPCompressionGzip = CompressionGzip
)

// Exporter defaults and bounds.
const (
	DefaultExporterBatch   = 512
	MaxExporterBatch       = 8192 // the exporter queue per sink
	DefaultExporterFlushMS = 5000
	MinExporterFlushMS     = 100
	MaxExporterFlushMS     = 600000
	DefaultOTLPTimeoutMS   = 10000
	DefaultDatadogSite     = "datadoghq.com"
	DefaultDatadogService  = "gw"
)

// ObservabilityExporter is one observability_exporters entry. Exactly one
// of the kind blocks is set, matching Kind.
type ObservabilityExporter struct {
	Index int
	ID    string
	Name  string

	Kind            string
	Enabled         bool  // default true
	BatchSize       int64 // events per batch, default DefaultExporterBatch
	FlushIntervalMS int64 // longest wait before a partial batch is sent, default DefaultExporterFlushMS

	OTLP        *OTLPHTTPExporter
	ObjectStore *ObjectStoreExporter
	SLS         *SLSExporter
	Datadog     *DatadogExporter
}

// FlushInterval is FlushIntervalMS as a duration.
func (x *ObservabilityExporter) FlushInterval() time.Duration {
	return time.Duration(x.FlushIntervalMS) * time.Millisecond
}

// OTLPHTTPExporter sends OTLP/HTTP (protobuf) to Endpoint, used as written.
type OTLPHTTPExporter struct {
	Endpoint    string
	Headers     []UpstreamHeader
	TimeoutMS   int64  // per request, default DefaultOTLPTimeoutMS
	Compression string // OTLPCompressionNone (default) or OTLPCompressionGzip
}

// ObjectStoreExporter writes batches as objects under Prefix in Bucket.
type ObjectStoreExporter struct {
	Provider        string // ObjectStoreGCS or ObjectStoreS3
	Bucket          string
	Prefix          string
	Endpoint        string // "" = the provider's public endpoint
	Region          string // s3 only
	AuthMode        string // AuthModeCloudIdentity (default) or AuthModeStatic
	AccessKeyID     Secret // static only (gcs: HMAC interoperability key)
	SecretAccessKey Secret // static only
	Compression     string // CompressionNone (default) or CompressionGzip: .ndjson.gz objects
}

// SLSExporter writes to an Aliyun Log Service logstore.
type SLSExporter struct {
	Endpoint        string
	Project         string
	Logstore        string
	AccessKeyID     Secret
	AccessKeySecret Secret
}

// DatadogExporter sends logs to the Datadog intake of Site.
type DatadogExporter struct {
	Site    string // default DefaultDatadogSite
	APIKey  Secret
	Service string // default DefaultDatadogService
}

// exporterFields lists each kind's own fields; a field of another kind is
// rejected by name.
var exporterFields = map[string][]string{
	ExporterOTLPHTTP:    {"endpoint", "headers", "timeout_ms", "compression"},
	ExporterObjectStore: {"provider", "bucket", "prefix", "endpoint", "region", "auth_mode", "access_key_id", "secret_access_key", "compression"},
	ExporterSLS:         {"endpoint", "project", "logstore", "access_key_id", "access_key_secret"},
	ExporterDatadog:     {"site", "api_key", "service"},
}

// The name checks compile on first use: only files with exporters reach
// them, and the counted repetitions ({1,126}) made these the costliest
// compiles at gw's init (~130 KB of heap, milliseconds of cold start).
var (
	bucketRE       = lazyRE(`^[a-z0-9][a-z0-9._-]{1,61}[a-z0-9]$`)
	datadogSiteRE  = lazyRE(`^[a-z0-9-]+(\.[a-z0-9-]+)+$`)
	slsResourceRE  = lazyRE(`^[a-z0-9][a-z0-9_-]{1,126}[a-z0-9]$`)
	allExportField = func() []string {
		var out []string
		for _, k := range ExporterKinds {
			for _, f := range exporterFields[k] {
				if !containsString(out, f) {
					out = append(out, f)
				}
			}
		}
		return out
	}()
)

// CheckExporterURL applies the exporter endpoint rules (shared with the
// control plane's exporter create/update): absolute http or https URL with a
// lowercase scheme; after a loopback http host, no empty port ("host:"), no
// empty query ("?") and no empty fragment ("#"). User-info is accepted as
// written. The message never echoes the URL. "" means valid.
func CheckExporterURL(raw string) string {
	i := strings.Index(raw, "://")
	if i <= 0 {
		return "must be an absolute http or https URL"
	}
	if strings.ToLower(raw[:i]) != raw[:i] {
		return "URL scheme must be lowercase"
	}
	if msg := checkBaseURL(raw); msg != "" {
		return msg
	}
	u, _ := url.Parse(raw)
	if u.Scheme == "http" && isLoopbackHost(u.Hostname()) {
		switch {
		case strings.HasSuffix(u.Host, ":"):
			return "empty port after a loopback http host; give a port or drop the ':'"
		case u.ForceQuery:
			return "empty query ('?') after a loopback http host; remove it"
		case strings.IndexByte(raw, '#') >= 0:
			return "empty fragment ('#') after a loopback http host; remove it"
		}
	}
	return ""
}

// exporterURL reads a required endpoint field with CheckExporterURL.
func exporterURL(o *obj, name string) string {
	s := o.reqStr(name)
	if s != "" {
		if msg := CheckExporterURL(s); msg != "" {
			o.errf(name, msg)
		}
	}
	return s
}

// secretField reads a required credential. warnLiteral warns when it is
// written without ${VAR} (identifiers such as access key IDs do not warn).
func secretField(o *obj, name string, warnLiteral bool) Secret {
	if !o.has(name) {
		o.raw(name)
		o.errf(name, "required; supply it as ${VAR}")
		return Secret{}
	}
	s, refs, ok := o.strRefs(name)
	if !ok {
		return Secret{}
	}
	if strings.TrimSpace(s) == "" {
		o.errf(name, "must not be empty")
	}
	if refs == 0 && warnLiteral {
		o.warnf(name, literalCredWarn)
	}
	return NewSecret(s)
}

func (l *loader) decodeObservabilityExporter(e *entry, o *obj) {
	x := &ObservabilityExporter{Index: e.idx, Enabled: true, BatchSize: DefaultExporterBatch, FlushIntervalMS: DefaultExporterFlushMS}
	x.Name = o.reqStr("name")
	e.setID("name", x.Name)
	x.ID = DeriveID(KindObservabilityExporter, x.Name)

	if !o.has("kind") {
		o.raw("kind")
		o.errf("kind", "required; one of "+strings.Join(ExporterKinds, ", "))
	} else {
		x.Kind, _ = o.enum("kind", ExporterKinds...)
	}
	x.Enabled = o.boolDefault("enabled", true)
	if v, ok := o.intRange("batch_size", 1, MaxExporterBatch); ok {
		x.BatchSize = v
	}
	if v, ok := o.intRange("flush_interval_ms", MinExporterFlushMS, MaxExporterFlushMS); ok {
		x.FlushIntervalMS = v
	}

	own := exporterFields[x.Kind]
	for _, f := range allExportField {
		if containsString(own, f) {
			continue
		}
		if x.Kind == "" {
			o.raw(f) // kind missing or unknown: that is the one useful error
			continue
		}
		o.rejectSet(f, "not accepted for kind "+x.Kind)
	}
	switch x.Kind {
	case ExporterOTLPHTTP:
		x.OTLP = decodeOTLPExporter(o)
	case ExporterObjectStore:
		x.ObjectStore = decodeObjectStoreExporter(o)
	case ExporterSLS:
		s := &SLSExporter{}
		s.Endpoint = exporterURL(o, "endpoint")
		s.Project = o.reqStr("project")
		if s.Project != "" && !slsResourceRE().MatchString(s.Project) {
			o.errf("project", "must be 3 to 128 lowercase letters, digits, '_' or '-', starting and ending with a letter or digit")
		}
		s.Logstore = o.reqStr("logstore")
		if s.Logstore != "" && !slsResourceRE().MatchString(s.Logstore) {
			o.errf("logstore", "must be 3 to 128 lowercase letters, digits, '_' or '-', starting and ending with a letter or digit")
		}
		s.AccessKeyID = secretField(o, "access_key_id", false)
		s.AccessKeySecret = secretField(o, "access_key_secret", true)
		x.SLS = s
	case ExporterDatadog:
		d := &DatadogExporter{Site: DefaultDatadogSite, Service: DefaultDatadogService}
		if v, ok := o.str("site"); ok {
			if !datadogSiteRE().MatchString(v) {
				o.errf("site", "must be a Datadog site host such as datadoghq.com or datadoghq.eu (no scheme or path)")
			}
			d.Site = v
		}
		d.APIKey = secretField(o, "api_key", true)
		if v, ok := o.str("service"); ok {
			if strings.TrimSpace(v) == "" {
				o.errf("service", "must not be empty")
			}
			d.Service = v
		}
		x.Datadog = d
	}
	l.res.ObservabilityExporters = append(l.res.ObservabilityExporters, x)
}

func decodeOTLPExporter(o *obj) *OTLPHTTPExporter {
	x := &OTLPHTTPExporter{TimeoutMS: DefaultOTLPTimeoutMS, Compression: OTLPCompressionNone}
	x.Endpoint = exporterURL(o, "endpoint")
	x.Headers = o.decodeUpstreamHeaders("headers")
	if v, ok := o.intMin("timeout_ms", 1); ok {
		x.TimeoutMS = v
	}
	if v, ok := o.enum("compression", OTLPCompressionNone, OTLPCompressionGzip); ok {
		x.Compression = v
	}
	return x
}

func decodeObjectStoreExporter(o *obj) *ObjectStoreExporter {
	x := &ObjectStoreExporter{AuthMode: AuthModeCloudIdentity, Compression: CompressionNone}
	if !o.has("provider") {
		o.raw("provider")
		o.errf("provider", "required; one of gcs, s3")
	} else {
		x.Provider, _ = o.enum("provider", ObjectStoreGCS, ObjectStoreS3)
	}
	x.Bucket = o.reqStr("bucket")
	if x.Bucket != "" && !bucketRE().MatchString(x.Bucket) {
		o.errf("bucket", "must be a bucket name: 3 to 63 lowercase letters, digits, '.', '_' or '-', starting and ending with a letter or digit")
	}
	if p, ok := o.str("prefix"); ok {
		if strings.HasPrefix(p, "/") {
			o.errf("prefix", "must not start with '/' (object keys are relative to the bucket)")
		}
		x.Prefix = p
	}
	authOK := true
	if o.has("auth_mode") {
		x.AuthMode, authOK = o.enum("auth_mode", AuthModeCloudIdentity, AuthModeStatic)
	} else {
		o.raw("auth_mode")
	}
	if x.Provider == ObjectStoreGCS {
		o.rejectSet("region", "accepted only for provider s3")
	} else if v, ok := o.str("region"); ok {
		x.Region = v
	}
	if ep, ok := o.str("endpoint"); ok {
		x.Endpoint = ep
		if msg := CheckExporterURL(ep); msg != "" {
			o.errf("endpoint", msg)
		} else if x.Provider == ObjectStoreGCS {
			u, _ := url.Parse(ep)
			switch {
			case u.Scheme != "https" && !isLoopbackHost(u.Hostname()):
				o.errf("endpoint", "gcs endpoint must use https, or http to a loopback host")
			case authOK && x.AuthMode == AuthModeCloudIdentity:
				o.errf("endpoint", "gcs endpoint is not allowed with auth_mode cloud_identity; set auth_mode: static")
			}
		}
	}
	switch {
	case !authOK:
		o.raw("access_key_id") // the auth_mode error is the useful one
		o.raw("secret_access_key")
	case x.AuthMode == AuthModeStatic:
		x.AccessKeyID = secretField(o, "access_key_id", false)
		x.SecretAccessKey = secretField(o, "secret_access_key", true)
	default:
		why := "accepted only with auth_mode static (cloud_identity uses the workload's own identity)"
		o.rejectSet("access_key_id", why)
		o.rejectSet("secret_access_key", why)
	}
	if v, ok := o.enum("compression", CompressionNone, CompressionGzip); ok {
		x.Compression = v
	}
	return x
}
