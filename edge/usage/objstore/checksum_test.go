package objstore_test

import (
	"crypto/md5"
	"encoding/base64"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"gw/admin/resources"
	"gw/edge/usage"
	"gw/edge/usage/objstore"
	"gw/edge/usage/usagetest"
)

// checksumStore is an S3 PutObject endpoint that checks the integrity
// headers as Amazon S3 does (a wrong x-amz-checksum-crc32c or Content-MD5
// is a 400 BadDigest) and, with lock set, refuses an upload without
// Content-MD5 the way an MD5-only store with Object Lock would.
type checksumStore struct {
	lock bool
	mu   sync.Mutex
	puts []http.Header // accepted uploads' headers
	seen int           // every PUT, refused ones included
}

func (s *checksumStore) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seen++
	fail := func(code, msg string) {
		w.WriteHeader(http.StatusBadRequest)
		io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>`+code+`</Code><Message>`+msg+`</Message></Error>`)
	}
	if c := r.Header.Get(objstore.ChecksumHeader); c != "" && c != objstore.CRC32C(body) {
		fail("BadDigest", "The CRC32C you specified did not match the calculated checksum.")
		return
	}
	md := r.Header.Get("Content-MD5")
	if sum := md5.Sum(body); md != "" && md != base64.StdEncoding.EncodeToString(sum[:]) {
		fail("BadDigest", "The Content-MD5 you specified did not match what we received.")
		return
	}
	if s.lock && md == "" {
		fail("InvalidRequest", "Content-MD5 HTTP header is required for Put Object requests with Object Lock parameters")
		return
	}
	s.puts = append(s.puts, r.Header.Clone())
	w.Header().Set("ETag", `"0"`)
}

func (s *checksumStore) accepted() []http.Header {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]http.Header(nil), s.puts...)
}

// TestObjectStoreChecksum: an S3 upload carries a CRC32C of the body and
// no Content-MD5; a store that insists on Content-MD5 gets it from the
// refused upload's resend on, without losing or dropping the batch.
func TestObjectStoreChecksum(t *testing.T) {
	for _, tc := range []struct {
		name    string
		lock    bool
		wantMD5 bool
	}{
		{"crc32c", false, false},
		{"md5 store", true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := &checksumStore{lock: tc.lock}
			srv := httptest.NewServer(st)
			defer srv.Close()
			sink, err := objstore.New(&resources.ObjectStoreExporter{Provider: resources.ObjectStoreS3, Bucket: "gw-usage", Endpoint: srv.URL,
				Region: "us-east-1", AuthMode: resources.AuthModeStatic, AccessKeyID: resources.NewSecret("k"), SecretAccessKey: resources.NewSecret("s")})
			if err != nil {
				t.Fatal(err)
			}
			p := usagetest.Pipeline(t, "object_store", 5, usage.ExporterPolicy, nil, sink)
			for i := 0; i < 10; i++ {
				p.Emit(usagetest.Record(i))
			}
			usagetest.Eventually(t, 10*time.Second, "two batches stored", func() bool { return len(st.accepted()) == 2 })
			for _, h := range st.accepted() {
				if got := h.Get("Content-MD5") != ""; got != tc.wantMD5 {
					t.Fatalf("Content-MD5 sent: %v; want %v", got, tc.wantMD5)
				}
				if got := h.Get(objstore.ChecksumHeader) != ""; got == tc.wantMD5 {
					t.Fatalf("x-amz-checksum-crc32c sent: %v; want %v", got, !tc.wantMD5)
				}
				if h.Get("X-Amz-Checksum-Algorithm") != "" {
					t.Fatalf("x-amz-checksum-algorithm sent (%q): not a PutObject header", h.Get("X-Amz-Checksum-Algorithm"))
				}
				if h.Get("X-Amz-Content-Sha256") != "UNSIGNED-PAYLOAD" || h.Get("Content-Encoding") != "" {
					t.Fatalf("want one plain PUT with an unsigned payload; headers %v", h)
				}
			}
			st.mu.Lock()
			seen := st.seen
			st.mu.Unlock()
			if want := 2 + map[bool]int{true: 1}[tc.lock]; seen != want {
				t.Fatalf("%d uploads; want %d (one refused CRC-only upload at most)", seen, want)
			}
			for _, s := range p.Status() {
				if s.DroppedEvents != 0 || s.FailedBatches != 0 {
					t.Fatalf("status %+v; want nothing failed or dropped", s)
				}
			}
		})
	}
}

// TestCRC32C: the header value is base64 of the big-endian CRC-32C, as
// S3 documents (the check value of "123456789" is 0xE3069283).
func TestCRC32C(t *testing.T) {
	if got := objstore.CRC32C([]byte("123456789")); got != base64.StdEncoding.EncodeToString([]byte{0xe3, 0x06, 0x92, 0x83}) {
		t.Fatalf("CRC32C = %s", got)
	}
}
