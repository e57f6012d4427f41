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

	done chan struct{} // closed when the process has exited (see Start)
}

// Start starts cmd and watches for its exit (a Proc made without Start
// is waited for by Stop).
func Start(cmd *exec.Cmd, addr string) (*Proc, error) {
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &Proc{Cmd: cmd, Addr: addr, done: make(chan struct{})}
	go func() { cmd.Wait(); close(p.done) }()
	return p, nil
}

// errExited: the child ended before it was ready.
var errExited = errors.New("exited before it was ready")

// launchAttempts bounds Launch's retries.
const launchAttempts = 3

// Launch starts a child on ports free loopback addresses and waits for
// ready. FreeAddr's port is free when it returns, not when the child binds
// it: another process may take it in between, and the child then exits.
// Such a child is started again on new addresses, up to launchAttempts
// times; any other failure is returned at once. addrs[0] is the Proc's
// Addr.
func Launch(what string, ports int, cmdFor func(addrs []string) *exec.Cmd, ready func(p *Proc, addrs []string) error) (*Proc, []string, error) {
	var last error
	for range launchAttempts {
		addrs := make([]string, ports)
		for i := range addrs {
			a, err := FreeAddr()
			if err != nil {
				return nil, nil, err
			}
			addrs[i] = a
		}
		p, err := Start(cmdFor(addrs), addrs[0])
		if err != nil {
			return nil, nil, fmt.Errorf("cannot start %s: %w", what, err)
		}
		if err = ready(p, addrs); err == nil {
			return p, addrs, nil
		}
		p.Stop()
		if !errors.Is(err, errExited) {
			return nil, nil, fmt.Errorf("%s: %w", what, err)
		}
		last = err
	}
	return nil, nil, fmt.Errorf("%s %w %d times (a port taken by another process?)", what, last, launchAttempts)
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
	p, _, err := Launch("the mock", 1, func(a []string) *exec.Cmd { return mockCmd(gwBin, core, a[0]) }, readyMock)
	return p, err
}

func mockCmd(gwBin string, core int, addr string) *exec.Cmd {
	cmd := pinned(core, gwBin, "mock", "-addr", addr, "-record=false", "-model-suffix", "-2024-08-06")
	cmd.Stderr = os.Stderr
	return cmd
}

func readyMock(p *Proc, _ []string) error {
	return p.WaitHTTP("http://"+p.Addr+"/_mock/stats", 10*time.Second)
}

// StartGW starts `gw serve` on resources with the access log and the debug
// listener off (a perf run measures the proxy, not stderr).
func StartGW(gwBin string, core int, resources string, env []string) (*Proc, error) {
	p, _, err := Launch("gw", 1, func(a []string) *exec.Cmd {
		cmd := pinned(core, gwBin, "serve", "--resources-file", resources, "--listen", a[0], "--debug-listen", "", "--access-log=false")
		cmd.Env = append(os.Environ(), env...)
		cmd.Stderr = os.Stderr
		return cmd
	}, readyGW)
	return p, err
}

func readyGW(p *Proc, _ []string) error {
	return p.WaitHTTP("http://"+p.Addr+"/readyz", 30*time.Second)
}

// WaitHTTP polls url until it answers 200, the process exits (errExited)
// or d passes.
func (p *Proc) WaitHTTP(url string, d time.Duration) error {
	for deadline := time.Now().Add(d); time.Now().Before(deadline); {
		resp, err := http.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return nil
			}
		}
		select {
		case <-p.done:
			return errExited
		case <-time.After(25 * time.Millisecond):
		}
	}
	return errors.New("not ready: " + url)
}

// Stop terminates the process and waits for it.
func (p *Proc) Stop() {
	if p == nil || p.Cmd.Process == nil {
		return
	}
	p.Cmd.Process.Signal(syscall.SIGTERM)
	done := p.done
	if done == nil {
		done = make(chan struct{})
		go func() { p.Cmd.Wait(); close(done) }()
	}
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
