// Package sls exports usage records to Aliyun Log Service with the PutLogs
// API: a protobuf LogGroup per batch (one Log per record, one Content per
// record field), LZ4-compressed (the SDK's default, x-log-compresstype: lz4),
// signed with the LOG HMAC-SHA1 scheme.
package sls

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/md5"
	"crypto/sha1"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"io"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/pierrec/lz4/v4"
	"google.golang.org/protobuf/encoding/protowire"

	"gw/admin/resources"
	"gw/edge/usage"
	"gw/sse/rawjson"
)

// APIVersion is the x-log-apiversion of PutLogs.
const APIVersion = "0.6.0"

// Sink writes batches to one logstore.
type Sink struct {
	cfg  *resources.SLSExporter
	base *url.URL
	hc   *http.Client
	now  func() time.Time
	lg   logScratch
	lz   lz4.Compressor // its hash table is reused between batches
}

var _ usage.Sink = (*Sink)(nil)

// New builds the sink of one sls exporter.
func New(cfg *resources.SLSExporter) (*Sink, error) {
	u, err := url.Parse(cfg.Endpoint)
	if err != nil || u.Host == "" {
		return nil, &usage.SendError{Permanent: true, Msg: "the SLS endpoint is not an absolute URL"}
	}
	return &Sink{cfg: cfg, base: u, hc: &http.Client{Transport: usage.Transport(), Timeout: 30 * time.Second}, now: time.Now}, nil
}

// Finish writes the LogGroup as one raw LZ4 block (not the LZ4 frame
// format: what the PutLogs API and the official SDKs use for
// x-log-compresstype: lz4); the raw size travels in the payload's first 8
// bytes (x-log-bodyrawsize). LZ4 rather than deflate: it encodes several
// times faster (deflate dominated the sink's cost) and is the SDK default.
func (s *Sink) Finish(dst, body []byte, _ int) ([]byte, error) {
	pb := appendTopic(body) // into body's spare capacity, which the batch no longer needs
	var size [8]byte
	for i := range 8 {
		size[i] = byte(uint64(len(pb)) >> (8 * i))
	}
	dst = append(dst, size[:]...)
	at := len(dst)
	dst = slices.Grow(dst, lz4.CompressBlockBound(len(pb)))
	out := dst[at : at+lz4.CompressBlockBound(len(pb))]
	n, err := s.lz.CompressBlock(pb, out)
	if err != nil {
		return nil, errors.New("cannot compress the LogGroup: " + err.Error())
	}
	if n == 0 {
		// Incompressible: the block is then one literal run, which every
		// LZ4 decoder reads (the SDKs do the same).
		n = appendLiterals(out[:0], pb)
	}
	return dst[:at+n], nil
}

// appendLiterals writes src as an LZ4 block of one literal-only sequence
// into dst (capacity at least CompressBlockBound(len(src))) and returns
// its length.
func appendLiterals(dst, src []byte) int {
	l := len(src)
	if l < 15 {
		dst = append(dst, byte(l<<4))
	} else {
		dst = append(dst, 0xf0)
		for l -= 15; l >= 255; l -= 255 {
			dst = append(dst, 255)
		}
		dst = append(dst, byte(l))
	}
	return len(append(dst, src...))
}

// LogGroup appends the protobuf LogGroup of batch:
//
//	LogGroup { repeated Log Logs = 1; optional string Topic = 3; optional string Source = 4; }
//	Log { required uint32 Time = 1; repeated Content Contents = 2; optional fixed32 Time_ns = 4; }
//	Content { required string Key = 1; required string Value = 2; }
//
// Each record field is one Content: strings unquoted, null fields left
// out, other values as their JSON text. scratch is reused between calls.
func LogGroup(dst []byte, batch []usage.Record, scratch *[]byte) []byte {
	lg := logScratch{rec: *scratch}
	for i := range batch {
		dst = lg.appendLog(dst, &batch[i])
	}
	*scratch = lg.rec
	return appendTopic(dst)
}

// AppendRecord appends r's Log to body, the LogGroup's logs so far.
func (s *Sink) AppendRecord(body []byte, r *usage.Record) []byte {
	return s.lg.appendLog(body, r)
}

// logScratch holds the buffers one Log is built in, reused between records.
type logScratch struct{ log, content, kb, vb, rec []byte }

// appendLog appends the LogGroup field of one record's Log.
func (lg *logScratch) appendLog(dst []byte, r *usage.Record) []byte {
	log := lg.log[:0]
	log = protowire.AppendTag(log, 1, protowire.VarintType)
	log = protowire.AppendVarint(log, uint64(r.OccurredAt.Unix()))
	lg.rec = usage.AppendJSON(lg.rec[:0], r)
	_ = rawjson.ForEachKey(lg.rec, func(key, val []byte, kind rawjson.Kind) bool {
		if kind == rawjson.Null {
			return true
		}
		lg.kb, _ = rawjson.AppendUnquote(lg.kb[:0], key)
		k, v := lg.kb, val
		if kind == rawjson.String {
			lg.vb, _ = rawjson.AppendUnquote(lg.vb[:0], val)
			v = lg.vb
		}
		c := lg.content[:0]
		c = protowire.AppendTag(c, 1, protowire.BytesType)
		c = protowire.AppendBytes(c, k)
		c = protowire.AppendTag(c, 2, protowire.BytesType)
		c = protowire.AppendBytes(c, v)
		lg.content = c
		log = protowire.AppendTag(log, 2, protowire.BytesType)
		log = protowire.AppendBytes(log, c)
		return true
	})
	log = protowire.AppendTag(log, 4, protowire.Fixed32Type)
	log = protowire.AppendFixed32(log, uint32(r.OccurredAt.Nanosecond()))
	lg.log = log
	dst = protowire.AppendTag(dst, 1, protowire.BytesType)
	return protowire.AppendBytes(dst, log)
}

// appendTopic appends the LogGroup's fields after its logs.
func appendTopic(dst []byte) []byte {
	dst = protowire.AppendTag(dst, 3, protowire.BytesType)
	return protowire.AppendString(dst, "gw_usage")
}

// Send posts one batch to /logstores/<logstore>/shards/lb on the project's
// host (<project>.<endpoint host>).
func (s *Sink) Send(ctx context.Context, b *usage.Batch) error {
	if len(b.Payload) < 8 {
		return &usage.SendError{Permanent: true, Msg: "BUG: sls payload without its size"}
	}
	var raw uint64
	for i := range 8 {
		raw |= uint64(b.Payload[i]) << (8 * i)
	}
	body := b.Payload[8:]
	path := "/logstores/" + s.cfg.Logstore + "/shards/lb"
	u := *s.base
	u.Path = path
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), bytes.NewReader(body))
	if err != nil {
		return &usage.SendError{Permanent: true, Msg: "cannot build the PutLogs request"}
	}
	req.Host = s.cfg.Project + "." + s.base.Host
	sum := md5.Sum(body)
	h := req.Header
	h.Set("Content-Type", "application/x-protobuf")
	h.Set("Content-MD5", strings.ToUpper(hex.EncodeToString(sum[:])))
	h.Set("Date", s.now().UTC().Format(http.TimeFormat))
	h.Set("x-log-apiversion", APIVersion)
	h.Set("x-log-signaturemethod", "hmac-sha1")
	h.Set("x-log-bodyrawsize", strconv.FormatUint(raw, 10))
	h.Set("x-log-compresstype", "lz4")
	h.Set("Authorization", "LOG "+s.cfg.AccessKeyID.Reveal()+":"+Sign(s.cfg.AccessKeySecret.Reveal(), http.MethodPost, path, nil, h))
	resp, err := s.hc.Do(req)
	if err != nil {
		return &usage.SendError{Msg: "cannot reach SLS: " + usage.NetReason(err)}
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	return usage.CheckResponse(resp.StatusCode, resp.Header, msg)
}

// Sign is the SLS request signature: base64(HMAC-SHA1(secret,
// VERB\nCONTENT-MD5\nCONTENT-TYPE\nDATE\nCanonicalizedLOGHeaders\nCanonicalizedResource)).
// The canonical headers are every x-log-* and x-acs-* header, lowercase,
// sorted, as name:value lines; the resource is the path plus the sorted
// query.
func Sign(secret, method, path string, query url.Values, h http.Header) string {
	var names []string
	for k := range h {
		lk := strings.ToLower(k)
		if strings.HasPrefix(lk, "x-log-") || strings.HasPrefix(lk, "x-acs-") {
			names = append(names, lk)
		}
	}
	sort.Strings(names)
	var sb strings.Builder
	sb.WriteString(method + "\n" + h.Get("Content-MD5") + "\n" + h.Get("Content-Type") + "\n" + h.Get("Date") + "\n")
	for _, n := range names {
		sb.WriteString(n + ":" + h.Get(n) + "\n")
	}
	sb.WriteString(path)
	if len(query) > 0 {
		keys := make([]string, 0, len(query))
		for k := range query {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for i, k := range keys {
			if i == 0 {
				sb.WriteByte('?')
			} else {
				sb.WriteByte('&')
			}
			sb.WriteString(k + "=" + query.Get(k))
		}
	}
	m := hmac.New(sha1.New, []byte(secret))
	m.Write([]byte(sb.String()))
	return base64.StdEncoding.EncodeToString(m.Sum(nil))
}
