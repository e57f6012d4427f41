package sls_test

import (
	"crypto/hmac"
	"crypto/md5"
	"crypto/sha1"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pierrec/lz4/v4"
	"google.golang.org/protobuf/encoding/protowire"

	"gw/admin/resources"
	"gw/edge/usage"
	"gw/edge/usage/sls"
	"gw/edge/usage/usagetest"
)

// logService is an HTTP receiver of PutLogs that checks what Log Service
// checks: the project host, the path, API version, Content-MD5 (uppercase
// hex MD5 of the body), the declared raw size after inflating, the LOG
// signature (computed here independently of the package), and the
// protobuf LogGroup.
type logService struct {
	mu     sync.Mutex
	logs   []map[string]string
	bad    []string
	secret string
}

func (ls *logService) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	fail := func(status int, code string) {
		ls.mu.Lock()
		ls.bad = append(ls.bad, code)
		ls.mu.Unlock()
		w.WriteHeader(status)
		fmt.Fprintf(w, `{"errorCode":%q,"errorMessage":"refused"}`, code)
	}
	body, _ := io.ReadAll(r.Body)
	switch {
	case r.Method != http.MethodPost || r.URL.Path != "/logstores/usage-store/shards/lb":
		fail(404, "LogStoreNotExist")
		return
	case !strings.HasPrefix(r.Host, "gw-proj.127.0.0.1:"):
		fail(404, "ProjectNotExist")
		return
	case r.Header.Get("x-log-apiversion") != "0.6.0" || r.Header.Get("x-log-signaturemethod") != "hmac-sha1":
		fail(400, "InvalidAPIVersion")
		return
	}
	sum := md5.Sum(body)
	if r.Header.Get("Content-MD5") != fmt.Sprintf("%X", sum) {
		fail(400, "InvalidContentMD5")
		return
	}
	// Signature: VERB, MD5, type, date, sorted x-log-/x-acs- headers, resource.
	var canon []string
	for k := range r.Header {
		if lk := strings.ToLower(k); strings.HasPrefix(lk, "x-log-") || strings.HasPrefix(lk, "x-acs-") {
			canon = append(canon, lk+":"+r.Header.Get(k))
		}
	}
	sort.Strings(canon)
	toSign := "POST\n" + r.Header.Get("Content-MD5") + "\n" + r.Header.Get("Content-Type") + "\n" + r.Header.Get("Date") + "\n" +
		strings.Join(canon, "\n") + "\n" + r.URL.Path
	m := hmac.New(sha1.New, []byte(ls.secret))
	m.Write([]byte(toSign))
	if r.Header.Get("Authorization") != "LOG ak-id:"+base64.StdEncoding.EncodeToString(m.Sum(nil)) {
		fail(401, "SignatureNotMatch")
		return
	}
	if d, err := http.ParseTime(r.Header.Get("Date")); err != nil || time.Since(d) > 15*time.Minute {
		fail(400, "RequestTimeExpired")
		return
	}
	if r.Header.Get("x-log-compresstype") != "lz4" {
		fail(400, "InvalidCompressType")
		return
	}
	// A raw LZ4 block whose decoded size is x-log-bodyrawsize exactly.
	rawSize, err := strconv.Atoi(r.Header.Get("x-log-bodyrawsize"))
	if err != nil || rawSize < 0 || rawSize > 64<<20 {
		fail(400, "InvalidBodyRawSize")
		return
	}
	raw := make([]byte, rawSize)
	if n, err := lz4.UncompressBlock(body, raw); err != nil || n != rawSize {
		fail(400, "InvalidBodyRawSize")
		return
	}
	logs, ok := decodeLogGroup(raw)
	if !ok {
		fail(400, "PostBodyInvalid")
		return
	}
	ls.mu.Lock()
	ls.logs = append(ls.logs, logs...)
	ls.mu.Unlock()
	w.WriteHeader(200)
}

// decodeLogGroup reads LogGroup.Logs (1) → Log.Time (1), Log.Contents (2)
// → Content.Key (1), Content.Value (2).
func decodeLogGroup(b []byte) ([]map[string]string, bool) {
	var out []map[string]string
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return nil, false
		}
		b = b[n:]
		if num != 1 || typ != protowire.BytesType {
			m := protowire.ConsumeFieldValue(num, typ, b)
			if m < 0 {
				return nil, false
			}
			b = b[m:]
			continue
		}
		logb, m := protowire.ConsumeBytes(b)
		if m < 0 {
			return nil, false
		}
		b = b[m:]
		log := map[string]string{}
		for len(logb) > 0 {
			num, typ, n := protowire.ConsumeTag(logb)
			if n < 0 {
				return nil, false
			}
			logb = logb[n:]
			switch {
			case num == 1 && typ == protowire.VarintType:
				v, m := protowire.ConsumeVarint(logb)
				if m < 0 {
					return nil, false
				}
				log["__time__"] = strconv.FormatUint(v, 10)
				logb = logb[m:]
			case num == 2 && typ == protowire.BytesType:
				c, m := protowire.ConsumeBytes(logb)
				if m < 0 {
					return nil, false
				}
				logb = logb[m:]
				var k, v string
				for len(c) > 0 {
					cn, _, n := protowire.ConsumeTag(c)
					if n < 0 {
						return nil, false
					}
					s, m := protowire.ConsumeBytes(c[n:])
					if m < 0 {
						return nil, false
					}
					if cn == 1 {
						k = string(s)
					} else {
						v = string(s)
					}
					c = c[n+m:]
				}
				log[k] = v
			default:
				m := protowire.ConsumeFieldValue(num, typ, logb)
				if m < 0 {
					return nil, false
				}
				logb = logb[m:]
			}
		}
		out = append(out, log)
	}
	return out, true
}

func TestSLSExport(t *testing.T) {
	ls := &logService{secret: "ak-secret"}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: ls}
	go srv.Serve(ln)
	defer srv.Close()
	cfg := &resources.SLSExporter{Endpoint: "http://" + ln.Addr().String(), Project: "gw-proj", Logstore: "usage-store",
		AccessKeyID: resources.NewSecret("ak-id"), AccessKeySecret: resources.NewSecret("ak-secret")}
	s, err := sls.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	p := usagetest.Pipeline(t, "sls", 4, usage.ExporterPolicy, nil, s)
	recs := make([]*usage.Record, 6)
	for i := range recs {
		recs[i] = usagetest.Record(i)
		p.Emit(recs[i])
	}
	usagetest.Eventually(t, 5*time.Second, "6 logs", func() bool { ls.mu.Lock(); defer ls.mu.Unlock(); return len(ls.logs) == 6 || len(ls.bad) > 0 })
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if len(ls.bad) > 0 {
		t.Fatalf("refused: %v", ls.bad)
	}
	got := map[string]map[string]string{}
	for _, l := range ls.logs {
		got[l["request_id"]] = l
	}
	for _, r := range recs {
		l := got[r.RequestID.String()]
		if l == nil {
			t.Fatalf("no log for %s", r.RequestID)
		}
		for k, want := range map[string]string{"model": "gpt", "status_code": "200", "user_name": "Ann", "stream": "false",
			"total_tokens": strconv.FormatInt(r.TotalTokens, 10), "__time__": strconv.FormatInt(r.OccurredAt.Unix(), 10)} {
			if l[k] != want {
				t.Fatalf("%s = %q; want %q (%v)", k, l[k], want, l)
			}
		}
		if _, ok := l["team_id"]; !ok {
			t.Fatal("team_id missing")
		}
		if _, ok := l["error_class"]; ok {
			t.Fatal("a null field was sent")
		}
	}
}

// TestSLSWrongSecret: a refused signature is a permanent error (401 is
// not retryable), counted as send_failed.
func TestSLSWrongSecret(t *testing.T) {
	ls := &logService{secret: "other"}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: ls}
	go srv.Serve(ln)
	defer srv.Close()
	s, _ := sls.New(&resources.SLSExporter{Endpoint: "http://" + ln.Addr().String(), Project: "gw-proj", Logstore: "usage-store",
		AccessKeyID: resources.NewSecret("ak-id"), AccessKeySecret: resources.NewSecret("ak-secret")})
	p := usagetest.Pipeline(t, "sls", 1, usage.ExporterPolicy, nil, s)
	p.Emit(usagetest.Record(1))
	usagetest.Eventually(t, 5*time.Second, "a drop", func() bool { return p.Status()[0].DroppedEvents == 1 })
	if st := p.Status()[0]; !strings.Contains(st.LastError, "SignatureNotMatch") || strings.Contains(st.LastError, "ak-secret") {
		t.Fatalf("last_error %q", st.LastError)
	}
}
