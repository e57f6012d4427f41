package usagetest

import (
	"context"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"gw/perf/testport"
)

// S3 credentials s3rver accepts.
const (
	S3Key    = "S3RVER"
	S3Secret = "S3RVER"
)

// S3Binary returns the s3rver executable: $GW_S3RVER, else the copy `make
// deps` installs under $HOME/.cache/gw/s3rver, else s3rver in PATH; "" when
// none exists.
func S3Binary() string {
	if p := os.Getenv("GW_S3RVER"); p != "" {
		return p
	}
	if home, err := os.UserHomeDir(); err == nil {
		p := filepath.Join(home, ".cache", "gw", "s3rver", "node_modules", ".bin", "s3rver")
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	if p, err := exec.LookPath("s3rver"); err == nil {
		return p
	}
	return ""
}

// S3Server is a real S3-compatible server process (s3rver) with one bucket.
// Kill and Restart simulate an outage; data and port survive it.
type S3Server struct {
	Endpoint string // http://127.0.0.1:<port>
	Bucket   string
	tb       testing.TB
	bin, dir string
	port     int
	cmd      *exec.Cmd
}

// StartS3 starts s3rver with bucket and stops it with the test. It skips
// the test when s3rver is not installed (`make deps` installs it).
func StartS3(tb testing.TB, bucket string) *S3Server {
	tb.Helper()
	bin := S3Binary()
	if bin == "" {
		tb.Skip("s3rver not found; run `make deps` (npm install of s3rver into ~/.cache/gw/s3rver) or set GW_S3RVER")
	}
	port := testport.Pick(tb) // below the ephemeral range: see testport
	s := &S3Server{Endpoint: "http://127.0.0.1:" + strconv.Itoa(port), Bucket: bucket, tb: tb, bin: bin, dir: tb.TempDir(), port: port}
	s.Restart()
	tb.Cleanup(s.Kill)
	return s
}

// Restart starts the server (again) on the same port and data directory.
func (s *S3Server) Restart() {
	s.tb.Helper()
	s.cmd = exec.Command(s.bin, "-d", s.dir, "-a", "127.0.0.1", "-p", strconv.Itoa(s.port), "-s", "--no-vhost-buckets", "--configure-bucket", s.Bucket)
	if err := s.cmd.Start(); err != nil {
		s.tb.Fatalf("cannot start s3rver: %v", err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		c, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(s.port), 200*time.Millisecond)
		if err == nil {
			c.Close()
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	s.tb.Fatalf("s3rver did not listen on port %d", s.port)
}

// Kill stops the server process.
func (s *S3Server) Kill() {
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Kill()
	_ = s.cmd.Wait()
	s.cmd = nil
}

// ContentEncoding returns the Content-Encoding the object key was stored
// with.
func (s *S3Server) ContentEncoding(tb testing.TB, key string) string {
	tb.Helper()
	c, err := minio.New("127.0.0.1:"+strconv.Itoa(s.port), &minio.Options{Creds: credentials.NewStaticV4(S3Key, S3Secret, "")})
	if err != nil {
		tb.Fatal(err)
	}
	info, err := c.StatObject(context.Background(), s.Bucket, key, minio.StatObjectOptions{})
	if err != nil {
		tb.Fatalf("cannot stat %s: %v", key, err)
	}
	return info.Metadata.Get("Content-Encoding")
}

// Objects returns every object of the bucket by key, read through the S3
// API.
func (s *S3Server) Objects(tb testing.TB) map[string][]byte {
	tb.Helper()
	c, err := minio.New("127.0.0.1:"+strconv.Itoa(s.port), &minio.Options{Creds: credentials.NewStaticV4(S3Key, S3Secret, "")})
	if err != nil {
		tb.Fatal(err)
	}
	ctx := context.Background()
	out := map[string][]byte{}
	for obj := range c.ListObjects(ctx, s.Bucket, minio.ListObjectsOptions{Recursive: true}) {
		if obj.Err != nil {
			tb.Fatalf("cannot list objects: %v", obj.Err)
		}
		o, err := c.GetObject(ctx, s.Bucket, obj.Key, minio.GetObjectOptions{})
		if err != nil {
			tb.Fatal(err)
		}
		b, err := io.ReadAll(o)
		o.Close()
		if err != nil {
			tb.Fatalf("cannot read %s: %v", obj.Key, err)
		}
		out[obj.Key] = b
	}
	return out
}
