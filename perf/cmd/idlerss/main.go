// Command idlerss reproduces `make perf`'s "idle" figure outside the suite
// and says where the pages are: it builds gw like `make build` (or takes a
// binary), starts `gw mock` and then, run after run, a fresh `gw serve` on
// the suite's basic config pinned to one core, waits 500 ms and reads
// VmRSS, RssAnon and RssFile from /proc/PID/status. It also times a cold
// start (exec → first 200 on /livez, unpinned, scenario 9's way) per run,
// and the user+system CPU gw spent up to the sample (its startup work, which
// a loaded machine does not inflate the way it inflates wall time; /proc
// counts it in clock ticks, 10 ms).
// After the runs it prints the largest mappings of the last gw (smaps) and,
// with -pkgs, which packages' text/rodata pages of the binary are resident
// (/proc/PID/pagemap against `go tool nm`).
//
//	go run ./perf/cmd/idlerss                 # build from this tree, 5 runs
//	go run ./perf/cmd/idlerss -gw /tmp/gw-old -runs 5 -pkgs
package main

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"gw/perf/suite"
)

func main() {
	gwBin := flag.String("gw", "", "gw binary to measure (default: build ./cmd/gw like `make build` into a temp dir)")
	mockBin := flag.String("mock", "", "binary whose `gw mock` is the upstream (default: -gw)")
	runs := flag.Int("runs", 5, "fresh gw processes to measure")
	core := flag.Int("core", 0, "core gw is pinned to for the RSS sample (-1: none)")
	settle := flag.Duration("settle", 500*time.Millisecond, "wait between ready and the sample (the suite's 500 ms)")
	top := flag.Int("top", 10, "largest mappings to print")
	pkgs := flag.Int("pkgs", 0, "print this many packages with the most resident bytes of the binary's text/rodata/data (0: off)")
	cold := flag.Bool("cold", true, "also time a cold start per run")
	hold := flag.Duration("hold", 0, "keep the last gw running this long after the sample (for pprof on -debug-listen)")
	debugListen := flag.String("debug-listen", "", "debug (pprof) listener of the last gw, e.g. 127.0.0.1:6061")
	flag.Parse()
	if err := run(*gwBin, *mockBin, *runs, *core, *settle, *top, *pkgs, *cold, *hold, *debugListen); err != nil {
		fmt.Fprintln(os.Stderr, "idlerss:", err)
		os.Exit(1)
	}
}

type sample struct {
	rss, anon, file float64 // MiB
	cpuMS           float64 // user+system CPU of gw up to the sample: its startup work
	coldMS          float64
}

func run(gwBin, mockBin string, runs, core int, settle time.Duration, top, pkgs int, cold bool, hold time.Duration, debugListen string) error {
	tmp, err := os.MkdirTemp("", "idlerss")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	if gwBin == "" {
		gwBin = filepath.Join(tmp, "gw")
		// Same flags as the Makefile's build target: static, trimmed paths.
		cmd := exec.Command("go", "build", "-trimpath", "-ldflags", "-X main.version=idlerss", "-o", gwBin, "./cmd/gw")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("cannot build gw: %w", err)
		}
	}
	if mockBin == "" {
		mockBin = gwBin
	}
	if st, err := os.Stat(gwBin); err == nil {
		fmt.Printf("binary %s: %.1f MiB\n", gwBin, float64(st.Size())/(1<<20))
	}
	mock, err := suite.StartMock(mockBin, 1)
	if err != nil {
		return err
	}
	defer mock.Stop()
	env := []string{"PERF_UPSTREAM_KEY=sk-perf", "PERF_CALLER_KEY=perf-caller", "PERF_MOCK=http://" + mock.Addr}
	cfg := filepath.Join(tmp, "basic.yaml")
	if err := os.WriteFile(cfg, []byte(suite.BasicFile("/knobs/chunks=200,chunk_delay=10ms")), 0o600); err != nil {
		return err
	}

	var samples []sample
	fmt.Printf("%-4s %9s %9s %9s %9s %9s\n", "run", "VmRSS", "RssAnon", "RssFile", "startCPU", "cold")
	for i := 0; i < runs; i++ {
		var s sample
		if cold {
			d, err := suite.ColdStart(gwBin, cfg, env)
			if err != nil {
				return err
			}
			s.coldMS = float64(d.Microseconds()) / 1000
		}
		last := i == runs-1
		var gw *suite.Proc
		if last && debugListen != "" {
			gw, err = startWithDebug(gwBin, core, cfg, env, debugListen)
		} else {
			gw, err = suite.StartGW(gwBin, core, cfg, env)
		}
		if err != nil {
			return err
		}
		time.Sleep(settle)
		st, err := status(gw.PID())
		if err != nil {
			gw.Stop()
			return err
		}
		s.rss, s.anon, s.file = st["VmRSS"], st["RssAnon"], st["RssFile"]
		if cpu, err := gw.CPUSeconds(); err == nil {
			s.cpuMS = cpu * 1000
		}
		samples = append(samples, s)
		fmt.Printf("%-4d %8.1fM %8.1fM %8.1fM %7.0fms %7.1fms\n", i+1, s.rss, s.anon, s.file, s.cpuMS, s.coldMS)
		if last {
			if err := report(gw.PID(), gwBin, top, pkgs); err != nil {
				fmt.Fprintln(os.Stderr, "idlerss:", err)
			}
			if hold > 0 {
				fmt.Printf("holding gw (pid %d, debug %s) for %s\n", gw.PID(), debugListen, hold)
				time.Sleep(hold)
			}
		}
		gw.Stop()
	}
	med := func(f func(sample) float64) (lo, mid, hi float64) {
		v := make([]float64, len(samples))
		for i, s := range samples {
			v[i] = f(s)
		}
		slices.Sort(v)
		return v[0], v[len(v)/2], v[len(v)-1]
	}
	for _, m := range []struct {
		name string
		f    func(sample) float64
		unit string
	}{
		{"VmRSS", func(s sample) float64 { return s.rss }, "MiB"},
		{"RssAnon", func(s sample) float64 { return s.anon }, "MiB"},
		{"RssFile", func(s sample) float64 { return s.file }, "MiB"},
		{"start CPU", func(s sample) float64 { return s.cpuMS }, "ms"},
		{"cold start", func(s sample) float64 { return s.coldMS }, "ms"},
	} {
		lo, mid, hi := med(m.f)
		fmt.Printf("median %-10s %6.1f %s (min %.1f, max %.1f)\n", m.name, mid, m.unit, lo, hi)
	}
	return nil
}

// startWithDebug is suite.StartGW with the pprof listener on.
func startWithDebug(gwBin string, core int, cfg string, env []string, debugListen string) (*suite.Proc, error) {
	p, _, err := suite.Launch("gw", 1, func(a []string) *exec.Cmd {
		argv := []string{gwBin, "serve", "--resources-file", cfg, "--listen", a[0], "--debug-listen", debugListen, "--access-log=false"}
		if core >= 0 {
			argv = append([]string{"taskset", "-c", strconv.Itoa(core)}, argv...)
		}
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Env = append(os.Environ(), env...)
		cmd.Stderr = os.Stderr
		return cmd
	}, func(p *suite.Proc, _ []string) error { return p.WaitHTTP("http://"+p.Addr+"/readyz", 30*time.Second) })
	return p, err
}

// status reads the kB fields of /proc/PID/status in MiB.
func status(pid int) (map[string]float64, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return nil, err
	}
	m := map[string]float64{}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok || !strings.HasSuffix(v, " kB") {
			continue
		}
		kb, err := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(v, " kB")), 64)
		if err == nil {
			m[k] = kb / 1024
		}
	}
	return m, nil
}

type mapping struct {
	lo, hi     uint64
	perms, obj string
	rss, anon  float64 // kB
}

// smaps reads every mapping of pid with its Rss and Anonymous.
func smaps(pid int) ([]mapping, error) {
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/smaps")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []mapping
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) == 0 {
			continue
		}
		if r, ok := strings.CutSuffix(fs[0], ":"); ok {
			if len(out) == 0 || len(fs) < 2 {
				continue
			}
			kb, _ := strconv.ParseFloat(fs[1], 64)
			switch r {
			case "Rss":
				out[len(out)-1].rss = kb
			case "Anonymous":
				out[len(out)-1].anon = kb
			}
			continue
		}
		lo, hi, ok := strings.Cut(fs[0], "-")
		if !ok || len(fs) < 5 {
			continue
		}
		m := mapping{perms: fs[1]}
		m.lo, _ = strconv.ParseUint(lo, 16, 64)
		m.hi, _ = strconv.ParseUint(hi, 16, 64)
		if len(fs) >= 6 {
			m.obj = fs[5]
		}
		out = append(out, m)
	}
	return out, sc.Err()
}

func report(pid int, gwBin string, top, pkgs int) error {
	if b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/smaps_rollup"); err == nil {
		fmt.Printf("\nsmaps_rollup of the last gw:\n")
		for _, line := range strings.Split(string(b), "\n")[1:] {
			if f := strings.Fields(line); len(f) == 3 && f[1] != "0" {
				fmt.Println("  " + line)
			}
		}
	}
	ms, err := smaps(pid)
	if err != nil {
		return err
	}
	sorted := slices.Clone(ms)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].rss > sorted[j].rss })
	fmt.Printf("\nlargest mappings (Rss kB, Anonymous kB, size kB):\n")
	for i, m := range sorted {
		if i == top || m.rss == 0 {
			break
		}
		fmt.Printf("  %x-%x %s %8.0f %8.0f %9d %s\n", m.lo, m.hi, m.perms, m.rss, m.anon, (m.hi-m.lo)>>10, m.obj)
	}
	if pkgs > 0 {
		return residentPackages(pid, gwBin, ms, pkgs)
	}
	return nil
}

// residentPackages attributes the resident pages of the binary's own
// mappings to packages: a symbol counts the bytes of it that lie in resident
// pages (pagemap's present bit, readable without privileges). Fault-around
// maps neighbours of a touched page too, so this is what is resident, not
// only what was touched.
func residentPackages(pid int, gwBin string, ms []mapping, n int) error {
	abs, _ := filepath.Abs(gwBin)
	pm, err := os.Open("/proc/" + strconv.Itoa(pid) + "/pagemap")
	if err != nil {
		return err
	}
	defer pm.Close()
	const page = 4096
	resident := map[uint64]bool{}
	var files []mapping
	for _, m := range ms {
		if m.obj != abs && m.obj != gwBin {
			continue
		}
		files = append(files, m)
		buf := make([]byte, (m.hi-m.lo)/page*8)
		if _, err := pm.ReadAt(buf, int64(m.lo/page*8)); err != nil {
			return fmt.Errorf("cannot read pagemap: %w", err)
		}
		for i := 0; i < len(buf); i += 8 {
			if binary.LittleEndian.Uint64(buf[i:])&(1<<63) != 0 {
				resident[m.lo+uint64(i/8)*page] = true
			}
		}
	}
	if len(files) == 0 {
		return errors.New("no mapping of " + abs + " found")
	}
	out, err := exec.Command("go", "tool", "nm", "-size", "-sort", "address", gwBin).Output()
	if err != nil {
		return fmt.Errorf("cannot run go tool nm: %w", err)
	}
	byPkg := map[string]float64{}
	bySeg := map[string]float64{}
	var total float64
	for _, line := range bytes.Split(out, []byte("\n")) {
		f := strings.Fields(string(line))
		if len(f) < 4 {
			continue
		}
		addr, err1 := strconv.ParseUint(f[0], 16, 64)
		size, err2 := strconv.ParseUint(f[1], 10, 64)
		if err1 != nil || err2 != nil || size == 0 {
			continue
		}
		var in uint64
		for p := addr &^ (page - 1); p < addr+size; p += page {
			if resident[p] {
				in += min(addr+size, p+page) - max(addr, p)
			}
		}
		if in == 0 {
			continue
		}
		byPkg[pkgOf(strings.Join(f[3:], " "))] += float64(in)
		bySeg[f[2]] += float64(in)
		total += float64(in)
	}
	fmt.Printf("\nresident bytes of the binary by symbol kind (T text, R rodata, D data, B bss): ")
	for _, k := range []string{"T", "t", "R", "r", "D", "d", "B", "b"} {
		if bySeg[k] > 0 {
			fmt.Printf("%s %.0fK  ", k, bySeg[k]/1024)
		}
	}
	fmt.Printf("\nresident symbol bytes by package (total %.1f MiB), top %d:\n", total/(1<<20), n)
	type kv struct {
		k string
		v float64
	}
	var all []kv
	for k, v := range byPkg {
		all = append(all, kv{k, v})
	}
	sort.Slice(all, func(i, j int) bool { return all[i].v > all[j].v })
	for i, e := range all {
		if i == n {
			break
		}
		fmt.Printf("  %8.0fK %s\n", e.v/1024, e.k)
	}
	return nil
}

// pkgOf returns the package path of a symbol name ("type:" and "go:"
// symbols keep their prefix; a method's receiver is not part of the path).
func pkgOf(sym string) string {
	for _, p := range []string{"type:", "go:", "runtime.", "gclocals", "$f64", "$f32", "$i"} {
		if strings.HasPrefix(sym, p) {
			if p == "runtime." {
				return "runtime"
			}
			return p
		}
	}
	slash := strings.LastIndexByte(sym, '/')
	if dot := strings.IndexByte(sym[slash+1:], '.'); dot >= 0 {
		return sym[:slash+1+dot]
	}
	return sym
}
