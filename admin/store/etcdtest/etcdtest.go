// Package etcdtest starts a real etcd for tests: a single member on free
// 127.0.0.1 ports with its own temp data dir. Tests skip with a clear
// message only when no etcd binary is installed (`make deps` installs the
// Debian package etcd-server, which provides /usr/bin/etcd).
package etcdtest

import (
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"gw/perf/testport"
)

// Server is one etcd process. Kill and Restart simulate a crash and a
// recovery: the ports and the data dir stay, so the data and the
// revisions survive as they would in production.
type Server struct {
	tb         testing.TB
	bin        string
	dir        string
	clientPort int
	peerPort   int
	cmd        *exec.Cmd
	exit       chan struct{}
	out        *syncBuffer
}

// Binary returns the path of etcd, or "" when it is absent.
func Binary() string {
	if p, err := exec.LookPath("etcd"); err == nil {
		return p
	}
	if _, err := os.Stat("/usr/bin/etcd"); err == nil {
		return "/usr/bin/etcd"
	}
	return ""
}

// Start starts etcd and stops it when the test ends. It skips the test
// when etcd is not installed.
func Start(tb testing.TB) *Server {
	tb.Helper()
	bin := Binary()
	if bin == "" {
		tb.Skip("etcd not found in PATH; install it (make deps, or apt-get install -y etcd-server) to run the etcd store tests")
	}
	s := &Server{tb: tb, bin: bin, dir: tb.TempDir()}
	// The first start takes new ports while another process (a parallel
	// test's etcd) has taken the free ones in between; Restart keeps its
	// ports, as a recovering member does.
	var err error
	for attempt := 0; attempt < 5; attempt++ {
		s.clientPort, s.peerPort = testport.Pick(tb), testport.Pick(tb)
		if err = s.start(); err == nil || !strings.Contains(err.Error(), "address already in use") {
			break
		}
	}
	if err != nil {
		tb.Fatalf("cannot start etcd on %s: %v", s.Endpoint(), err)
	}
	tb.Cleanup(s.Kill)
	return s
}

// Endpoint is the client URL, "http://127.0.0.1:<port>".
func (s *Server) Endpoint() string { return "http://127.0.0.1:" + strconv.Itoa(s.clientPort) }

// Restart starts etcd (again, after Kill) on the same ports and data.
func (s *Server) Restart() {
	s.tb.Helper()
	if s.cmd != nil {
		s.tb.Fatalf("BUG: etcdtest: Restart while running; call Kill first")
	}
	var err error
	for attempt := 0; attempt < 30; attempt++ {
		if err = s.start(); err == nil {
			return
		}
		time.Sleep(200 * time.Millisecond) // a port may linger briefly after Kill
	}
	s.tb.Fatalf("cannot start etcd on %s: %v", s.Endpoint(), err)
}

func (s *Server) start() error {
	peer := "http://127.0.0.1:" + strconv.Itoa(s.peerPort)
	cmd := exec.Command(s.bin,
		"--name", "gwtest",
		"--data-dir", s.dir,
		"--listen-client-urls", s.Endpoint(),
		"--advertise-client-urls", s.Endpoint(),
		"--listen-peer-urls", peer,
		"--initial-advertise-peer-urls", peer,
		"--initial-cluster", "gwtest="+peer,
		"--initial-cluster-state", "new",
		// A single member elects itself at once; short ticks make that and
		// lease expiry checks quick.
		"--heartbeat-interval", "10",
		"--election-timeout", "100",
		"--logger", "zap",
		"--log-level", "error",
	)
	out := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		return err
	}
	exit := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exit) }()
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-exit:
			return errors.New("etcd exited: " + out.String())
		default:
		}
		if Healthy(s.Endpoint()) == nil {
			s.cmd, s.exit, s.out = cmd, exit, out
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	_ = cmd.Process.Kill()
	<-exit
	return errors.New("etcd not healthy within 15s: " + out.String())
}

// Kill stops etcd at once (SIGKILL), as a crash would. Killing a stopped
// server does nothing.
func (s *Server) Kill() {
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Kill()
	<-s.exit
	s.cmd, s.exit = nil, nil
}

// Output is what etcd printed (errors only), for failure messages.
func (s *Server) Output() string {
	if s.out == nil {
		return ""
	}
	return s.out.String()
}

// Healthy asks etcd's /health endpoint, which answers true once the member
// has a leader and serves requests.
func Healthy(endpoint string) error {
	c := http.Client{Timeout: time.Second}
	resp, err := c.Get(endpoint + "/health")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), `"health":"true"`) {
		return errors.New("etcd not healthy: " + resp.Status + " " + string(b))
	}
	return nil
}

type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.b.Len() > 1<<16 {
		return len(p), nil // enough to explain a failure
	}
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
