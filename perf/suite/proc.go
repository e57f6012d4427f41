// Package suite runs the perf scenarios of `make perf`: it starts the mock
// upstream and gw as separate processes pinned to separate cores, drives
// them with perf/load, and compares every figure with perf/budgets.yaml.
package suite

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Proc is a child process (gw or the mock).
type Proc struct {
	Cmd  *exec.Cmd
	Addr string
}

// pinned wraps argv in `taskset -c core` when taskset exists and core >= 0.
func pinned(core int, argv ...string) *exec.Cmd {
	if core >= 0 {
		if ts, err := exec.LookPath("taskset"); err == nil {
			return exec.Command(ts, append([]string{"-c", strconv.Itoa(core)}, argv...)...)
		}
	}
	return exec.Command(argv[0], argv[1:]...)
}

// FreeAddr returns a free loopback address.
func FreeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// StartMock starts `gw mock` without request recording on a free port.
func StartMock(gwBin string, core int) (*Proc, error) {
	addr, err := FreeAddr()
	if err != nil {
		return nil, err
	}
	return startMockAt(gwBin, core, addr)
}

// StartGW starts `gw serve` on resources with the access log and the debug
// listener off (a perf run measures the proxy, not stderr).
func StartGW(gwBin string, core int, resources string, env []string) (*Proc, error) {
	addr, err := FreeAddr()
	if err != nil {
		return nil, err
	}
	cmd := pinned(core, gwBin, "serve", "--resources-file", resources, "--listen", addr, "--debug-listen", "", "--access-log=false")
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("cannot start gw: %w", err)
	}
	p := &Proc{Cmd: cmd, Addr: addr}
	if err := waitHTTP("http://"+addr+"/readyz", 30*time.Second); err != nil {
		p.Stop()
		return nil, err
	}
	return p, nil
}

func waitHTTP(url string, d time.Duration) error {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		resp, err := http.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return nil
			}
		}
		time.Sleep(25 * time.Millisecond)
	}
	return errors.New("not ready: " + url)
}

// Stop terminates the process and waits for it.
func (p *Proc) Stop() {
	if p == nil || p.Cmd.Process == nil {
		return
	}
	p.Cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { p.Cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		p.Cmd.Process.Kill()
		<-done
	}
}

// PID is the measured process: taskset execs the program, so the PID is the program's.
func (p *Proc) PID() int { return p.Cmd.Process.Pid }

// Memory reads VmRSS and VmHWM (peak) in MiB from /proc.
func (p *Proc) Memory() (rss, hwm float64, err error) {
	f, err := os.Open("/proc/" + strconv.Itoa(p.PID()) + "/status")
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		for _, k := range []struct {
			name string
			dst  *float64
		}{{"VmRSS:", &rss}, {"VmHWM:", &hwm}} {
			if strings.HasPrefix(line, k.name) {
				fields := strings.Fields(line[len(k.name):])
				if len(fields) > 0 {
					kb, _ := strconv.ParseFloat(fields[0], 64)
					*k.dst = kb / 1024
				}
			}
		}
	}
	return rss, hwm, sc.Err()
}

// CPUSeconds reads user+system CPU time from /proc/<pid>/stat.
func (p *Proc) CPUSeconds() (float64, error) { return cpuSeconds(p.PID()) }

// cpuSeconds reads the user+system CPU time of pid from /proc/<pid>/stat.
func cpuSeconds(pid int) (float64, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, errors.New("malformed /proc stat")
	}
	f := strings.Fields(s[i+2:])
	if len(f) < 13 {
		return 0, errors.New("malformed /proc stat")
	}
	ut, _ := strconv.ParseFloat(f[11], 64)
	st, _ := strconv.ParseFloat(f[12], 64)
	return (ut + st) / 100, nil // USER_HZ is 100 on Linux
}

// Signal sends sig to the process.
func (p *Proc) Signal(sig os.Signal) error { return p.Cmd.Process.Signal(sig) }

// softirqSeconds reads the machine's time in software interrupts from
// /proc/stat (all CPUs). On loopback a TCP segment's delivery to the
// receiving socket, and the wake-up of the thread waiting on it, run
// there: kernel work no process's utime+stime shows.
func softirqSeconds() (float64, error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, err
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	// cpu user nice system idle iowait irq softirq ...
	if len(f) < 8 || f[0] != "cpu" {
		return 0, errors.New("malformed /proc/stat")
	}
	v, err := strconv.ParseFloat(f[7], 64)
	return v / 100, err // USER_HZ
}

// tcpOutSegs reads the machine's count of TCP segments sent
// (/proc/net/snmp Tcp OutSegs).
func tcpOutSegs() (float64, error) {
	b, err := os.ReadFile("/proc/net/snmp")
	if err != nil {
		return 0, err
	}
	var names []string
	for _, line := range strings.Split(string(b), "\n") {
		if !strings.HasPrefix(line, "Tcp:") {
			continue
		}
		f := strings.Fields(line)
		if names == nil {
			names = f
			continue
		}
		if i := slices.Index(names, "OutSegs"); i > 0 && i < len(f) {
			return strconv.ParseFloat(f[i], 64)
		}
		break
	}
	return 0, errors.New("no Tcp OutSegs in /proc/net/snmp")
}
