// Package redistest starts a real redis-server for tests: a free port on
// 127.0.0.1 below the ephemeral range (testport), a temp dir, no
// persistence; also a TLS-only server with a test CA (StartTLS) and a
// 3-primary Redis Cluster (StartCluster). Tests skip with a clear message
// when redis-server is not installed (`apt-get install -y redis-server`).
package redistest

import (
	"bufio"
	"errors"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"gw/perf/testport"
)

// Server is one redis-server process. Kill and Start may be called again
// to simulate an outage; the port stays the same.
type Server struct {
	tb   testing.TB
	bin  string
	dir  string
	port int
	// extra are more redis-server arguments (cluster mode, TLS).
	extra []string
	// tlsPort: the server listens with TLS only (Ping then skips).
	tls   bool
	tlsCA []byte // PEM of the CA that signed the server certificate
	cmd   *exec.Cmd
	exit  chan struct{}
}

// Binary returns the path of redis-server, or "" when it is absent.
func Binary() string {
	p, err := exec.LookPath("redis-server")
	if err != nil {
		return ""
	}
	return p
}

// Start starts a redis-server and stops it when the test ends. It skips
// the test when redis-server is missing.
func Start(tb testing.TB) *Server {
	tb.Helper()
	bin := Binary()
	if bin == "" {
		tb.Skip("redis-server not found in PATH; install it (apt-get install -y redis-server) to run the shared-store tests")
	}
	s := &Server{tb: tb, bin: bin, dir: tb.TempDir()}
	s.launch()
	return s
}

// launch starts the server for the first time on a new port (see
// testport), taking another when a parallel test's server won the race
// for it, and stops it with the test. Restart keeps the port.
func (s *Server) launch() {
	s.tb.Helper()
	var err error
	for attempt := 0; attempt < 5; attempt++ {
		s.port = testport.Pick(s.tb)
		if err = s.start(); err == nil {
			s.tb.Cleanup(s.Kill)
			return
		}
	}
	s.tb.Fatalf("cannot start redis-server on %s: %v", s.Addr(), err)
}

// Addr returns "127.0.0.1:<port>".
func (s *Server) Addr() string { return "127.0.0.1:" + strconv.Itoa(s.port) }

// Restart starts the server again on the same port (after Kill), with an
// empty dataset.
func (s *Server) Restart() {
	s.tb.Helper()
	if s.cmd != nil {
		s.tb.Fatalf("BUG: redistest: Restart while running; call Kill first")
	}
	var err error
	for attempt := 0; attempt < 50; attempt++ {
		if err = s.start(); err == nil {
			return
		}
		time.Sleep(100 * time.Millisecond) // the port may linger briefly after Kill
	}
	s.tb.Fatalf("cannot start redis-server on %s: %v", s.Addr(), err)
}

func (s *Server) start() error {
	args := []string{
		"--port", strconv.Itoa(s.port),
		"--bind", "127.0.0.1",
		"--dir", s.dir,
		"--save", "",
		"--appendonly", "no",
		"--protected-mode", "no",
		"--loglevel", "warning",
	}
	if s.tls {
		args[1] = "0"
		args = append(args, "--tls-port", strconv.Itoa(s.port))
	}
	cmd := exec.Command(s.bin, append(args, s.extra...)...)
	out := &strings.Builder{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		return err
	}
	exit := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exit) }()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-exit:
			return errors.New("redis-server exited: " + out.String())
		default:
		}
		if s.ready() {
			s.cmd, s.exit = cmd, exit
			return nil
		}
		time.Sleep(10 * time.Millisecond)
	}
	_ = cmd.Process.Kill()
	<-exit
	return errors.New("redis-server did not answer PING within 5s: " + out.String())
}

func (s *Server) ready() bool {
	if s.tls {
		return tlsPing(s.Addr(), s.tlsCA) == nil
	}
	return Ping(s.Addr()) == nil
}

// Kill stops the server at once (SIGKILL), as a crash would. Killing a
// stopped server does nothing.
func (s *Server) Kill() {
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Kill()
	<-s.exit
	s.cmd, s.exit = nil, nil
}

// Ping sends PING over a fresh connection and expects +PONG.
func Ping(addr string) error {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return err
	}
	return ping(c)
}

// ping sends PING on c, expects +PONG and closes c.
func ping(c net.Conn) error {
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Second))
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}
	if line != "+PONG\r\n" {
		return errors.New("unexpected PING reply " + strconv.Quote(line))
	}
	return nil
}
