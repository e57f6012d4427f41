package exporters_test

import (
	"bufio"
	"crypto/md5"
	"hash/crc32"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"gw/admin/resources"
	"gw/edge/usage"
	"gw/edge/usage/exporters"
	"gw/edge/usage/objstore"
	"gw/edge/usage/otlp"
	"gw/edge/usage/usagetest"
)

// sinkEnv makes the test binary a discard receiver (see TestMain): the
// benchmark's receiver runs in its own process so that the process CPU
// the benchmark reads is the exporting side's alone.
const sinkEnv = "GW_EXPORTERS_BENCH_SINK"

func TestMain(m *testing.M) {
	if os.Getenv(sinkEnv) == "1" {
		serveDiscard()
		return
	}
	os.Exit(m.Run())
}

// serveDiscard answers every request 200 after reading its body: an S3
// PutObject gets an ETag, an OTLP export an empty response. It prints its
// address on the first line of stdout and exits when stdin closes.
func serveDiscard() {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		os.Exit(1)
	}
	os.Stdout.WriteString("http://" + ln.Addr().String() + "\n")
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
	}()
	_ = http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("ETag", `"d41d8cd98f00b204e9800998ecf8427e"`)
		if r.Header.Get("Content-Type") == "application/x-protobuf" {
			w.Header().Set("Content-Type", "application/x-protobuf")
		}
	}))
}

// startDiscard starts the discard receiver process; it ends with b.
func startDiscard(b *testing.B) string {
	cmd := exec.Command(os.Args[0], "-test.run", "^$")
	cmd.Env = append(os.Environ(), sinkEnv+"=1")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { stdin.Close(); _ = cmd.Wait() })
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		b.Fatal("discard receiver did not start: ", err)
	}
	return strings.TrimSpace(line)
}

// perfExporters is scenario 8's observability_exporters block (perf/suite
// exportersBlock): OTLP/HTTP with gzip and an S3 object store, defaults
// for batch size (512) and flush interval (5 s).
func perfExporters(base string) string {
	return `_format_version: "1"
observability_exporters:
  - name: perf-otlp
    kind: otlp_http
    endpoint: ` + base + `/v1/traces
    compression: gzip
  - name: perf-archive
    kind: object_store
    provider: s3
    bucket: perf
    endpoint: ` + base + `
    region: us-east-1
    auth_mode: static
    access_key_id: perf
    secret_access_key: perf-secret
    compression: gzip
`
}

func cpuNow() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkExportersCPU is the whole export path's CPU per record as
// scenario 8 runs it: records emitted into a pipeline whose sinks are the
// perf config's exporters (none, one, or both), encoded, compressed,
// checksummed and sent over HTTP to a receiver in another process, then
// flushed by Close. cpu-ns/record is this process's user+system CPU (all
// goroutines, GC and the scheduler included) over the records emitted;
// "none" is the pipeline alone, so a sink set's export cost is its figure
// minus none's. Records arrive at benchRate, in bursts of 20 a
// millisecond, as a loaded gateway's do (scenario 8 runs gw at 10–20k
// requests/s); emitting flat out would instead measure the pipeline's
// burst handling (huge drains, new chunks, GC). Nothing may be dropped:
// the emitter also keeps at most 4096 records ahead of the slower sink.
func BenchmarkExportersCPU(b *testing.B) {
	const benchRate = 20000 // records per second
	recs := make([]usage.Record, 1024)
	for i := range recs {
		recs[i] = *usagetest.Record(i)
	}
	for _, set := range []struct {
		name string
		keep func(kind string) bool
	}{
		{"none", func(string) bool { return false }},
		{"otlp", func(k string) bool { return k == resources.ExporterOTLPHTTP }},
		{"s3", func(k string) bool { return k == resources.ExporterObjectStore }},
		{"both", func(string) bool { return true }},
	} {
		b.Run(set.name, func(b *testing.B) {
			base := startDiscard(b)
			r := resources.Load([]byte(perfExporters(base)), func(string) (string, bool) { return "", false })
			if err := r.Err(); err != nil {
				b.Fatal(err)
			}
			var list []*resources.ObservabilityExporter
			for _, x := range r.Resources.ObservabilityExporters {
				if set.keep(x.Kind) {
					list = append(list, x)
				}
			}
			p := usage.New(usage.Options{})
			if errs := p.SetSinks(exporters.Specs(list)); len(errs) > 0 {
				b.Fatal(errs)
			}
			sent := func() int64 {
				least := int64(-1)
				for _, s := range p.Status() {
					if least < 0 || s.SentEvents < least {
						least = s.SentEvents
					}
				}
				return least
			}
			b.ReportAllocs()
			b.ResetTimer()
			cpu0 := cpuNow()
			start := time.Now()
			for i := 0; i < b.N; i++ {
				if i%20 == 0 {
					if d := time.Until(start.Add(time.Duration(i) * time.Second / benchRate)); d > 0 {
						time.Sleep(d)
					}
				}
				if i%256 == 0 && len(list) > 0 {
					for int64(i)-sent() >= 4096 {
						time.Sleep(200 * time.Microsecond)
					}
				}
				p.Emit(&recs[i%len(recs)])
			}
			p.Close(time.Minute)
			cpu := cpuNow() - cpu0
			b.StopTimer()
			for _, s := range p.Status() {
				if s.SentEvents != int64(b.N) || s.DroppedEvents != 0 {
					b.Fatalf("%s: sent %d, dropped %d of %d (last error %q)", s.Name, s.SentEvents, s.DroppedEvents, b.N, s.LastError)
				}
			}
			b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/record")
		})
	}
}

// BenchmarkExportEncode is the CPU work of one 512-record batch of the
// perf config's two exporters without the network: the OTLP encoding and
// its gzip, the NDJSON object and its upload checksum. Its instruction
// count under cachegrind divided by 512 × b.N is the per-record cost.
func BenchmarkExportEncode(b *testing.B) {
	batch := usagetest.Loaded(512)
	r := resources.Load([]byte(perfExporters("http://127.0.0.1:1")), func(string) (string, bool) { return "", false })
	if err := r.Err(); err != nil {
		b.Fatal(err)
	}
	xs := r.Resources.ObservabilityExporters
	plain := &usage.Encoder{Sink: otlp.New(&resources.OTLPHTTPExporter{Endpoint: xs[0].OTLP.Endpoint, TimeoutMS: 1000}, exporters.ServiceName)}
	gz := &usage.Encoder{Sink: otlp.New(xs[0].OTLP, exporters.ServiceName)}
	plainObj := *xs[1].ObjectStore
	plainObj.Compression = resources.CompressionNone
	obj, err := objstore.New(&plainObj)
	if err != nil {
		b.Fatal(err)
	}
	objEnc := usage.Encoder{Sink: obj}
	var buf []byte
	run := func(name string, step func() int) {
		b.Run(name, func(b *testing.B) {
			n := 0
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				n = step()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(batch)), "ns/record")
			b.ReportMetric(float64(n)/float64(len(batch)), "bytes/record")
		})
	}
	run("otlp", func() int { buf, _ = plain.Encode(buf[:0], batch); return len(buf) })
	run("otlp-gzip", func() int { buf, _ = gz.Encode(buf[:0], batch); return len(buf) })
	run("ndjson", func() int { buf, _ = objEnc.Encode(buf[:0], batch); return len(buf) })
	objGz, err := objstore.New(xs[1].ObjectStore) // compression: gzip
	if err != nil {
		b.Fatal(err)
	}
	objGzEnc := usage.Encoder{Sink: objGz}
	run("ndjson-gzip", func() int { buf, _ = objGzEnc.Encode(buf[:0], batch); return len(buf) })
	nd, _ := objEnc.Encode(nil, batch)
	run("md5", func() int { s := md5.Sum(nd); return len(nd) + int(s[0]&0) })
	tab := crc32.MakeTable(crc32.Castagnoli)
	run("crc32c", func() int { return len(nd) + int(crc32.Checksum(nd, tab)&0) })
}
