// Package exporters turns the resource file's observability_exporters into
// the usage pipeline's sinks: one constructor per kind, in one table.
package exporters

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"

	"gw/admin/resources"
	"gw/edge/usage"
	"gw/edge/usage/datadog"
	"gw/edge/usage/objstore"
	"gw/edge/usage/otlp"
	"gw/edge/usage/sls"
)

// ServiceName is the service.name / Datadog service default of gw's own
// telemetry.
const ServiceName = "gw"

// builders make one sink per exporter kind.
var builders = map[string]func(x *resources.ObservabilityExporter) (usage.Sink, error){
	resources.ExporterOTLPHTTP: func(x *resources.ObservabilityExporter) (usage.Sink, error) {
		return otlp.New(x.OTLP, ServiceName), nil
	},
	resources.ExporterObjectStore: func(x *resources.ObservabilityExporter) (usage.Sink, error) {
		return objstore.New(x.ObjectStore)
	},
	resources.ExporterDatadog: func(x *resources.ObservabilityExporter) (usage.Sink, error) {
		return datadog.New(x.Datadog), nil
	},
	resources.ExporterSLS: func(x *resources.ObservabilityExporter) (usage.Sink, error) {
		return sls.New(x.SLS)
	},
}

// Built reports whether kind has a sink in this build.
func Built(kind string) bool { return builders[kind] != nil }

// Specs returns the sinks of the enabled exporters.
func Specs(list []*resources.ObservabilityExporter) []usage.SinkSpec {
	out := make([]usage.SinkSpec, 0, len(list))
	for _, x := range list {
		build := builders[x.Kind]
		if !x.Enabled || build == nil {
			continue
		}
		batch := int(x.BatchSize)
		if x.Kind == resources.ExporterDatadog && batch > datadog.MaxBatch {
			batch = datadog.MaxBatch
		}
		x := x
		out = append(out, usage.SinkSpec{
			Config: usage.SinkConfig{Name: "exporter:" + x.Name, Kind: x.Kind, BatchSize: batch, FlushInterval: x.FlushInterval(),
				Retry: usage.ExporterPolicy, Fingerprint: Fingerprint(x)},
			Build: func() (usage.Sink, error) { return build(x) },
		})
	}
	return out
}

// Fingerprint identifies an exporter's settings, credentials included (a
// rotated key rebuilds the sink), as a hash that reveals none of them.
func Fingerprint(x *resources.ObservabilityExporter) string {
	var sb strings.Builder
	w := func(parts ...string) {
		for _, p := range parts {
			sb.WriteString(strconv.Quote(p))
			sb.WriteByte(0)
		}
	}
	w(x.Kind, strconv.FormatInt(x.BatchSize, 10), strconv.FormatInt(x.FlushIntervalMS, 10))
	if o := x.OTLP; o != nil {
		w(o.Endpoint, strconv.FormatInt(o.TimeoutMS, 10), o.Compression)
		for _, h := range o.Headers {
			w(h.Name, h.Value.Reveal())
		}
	}
	if o := x.ObjectStore; o != nil {
		w(o.Provider, o.Bucket, o.Prefix, o.Endpoint, o.Region, o.AuthMode, o.AccessKeyID.Reveal(), o.SecretAccessKey.Reveal())
	}
	if o := x.SLS; o != nil {
		w(o.Endpoint, o.Project, o.Logstore, o.AccessKeyID.Reveal(), o.AccessKeySecret.Reveal())
	}
	if o := x.Datadog; o != nil {
		w(o.Site, o.APIKey.Reveal(), o.Service)
	}
	sum := sha256.Sum256([]byte(sb.String()))
	return hex.EncodeToString(sum[:])
}
