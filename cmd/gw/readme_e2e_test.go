package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// readmeCommand is one shell command of a ```sh block of README.md, with
// continuation lines joined, and the output the README shows for it (a
// `# ...` comment line right after it), if any.
type readmeCommand struct {
	line   int
	cmd    string
	expect string
}

// readmeCommands returns the commands of README.md's ```sh blocks that talk
// to gw, the mock or the admin API, and the variable assignments they use.
func readmeCommands(t *testing.T) []readmeCommand {
	t.Helper()
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	var out []readmeCommand
	in, prevCmd := false, false // prevCmd: the last line ended a kept command
	var cur strings.Builder
	start := 0
	for i, l := range strings.Split(string(b), "\n") {
		switch {
		case strings.HasPrefix(l, "```sh"):
			in, prevCmd = true, false
			continue
		case strings.HasPrefix(l, "```"):
			in = false
			continue
		case !in:
			continue
		}
		if cur.Len() == 0 && strings.HasPrefix(l, "# ") {
			if prevCmd && strings.HasPrefix(l, "# {") {
				out[len(out)-1].expect = strings.TrimPrefix(l, "# ")
			}
			prevCmd = false
			continue
		}
		if cur.Len() == 0 {
			start = i + 1
		}
		if s, ok := strings.CutSuffix(l, "\\"); ok {
			cur.WriteString(s + " ")
			continue
		}
		cur.WriteString(l)
		c := strings.TrimSpace(cur.String())
		cur.Reset()
		prevCmd = strings.Contains(c, "localhost:") || strings.Contains(c, "127.0.0.1:") || strings.Contains(c, "./bin/gw")
		if prevCmd {
			out = append(out, readmeCommand{line: start, cmd: c})
		}
	}
	return out
}

// TestReadmeQuickstart runs the README's shell examples against what `make
// run` starts (gw mock, gw serve on examples/gw.yaml with the admin API),
// so the front door's commands keep working: each curl must answer 2xx, or
// exactly the error the README shows after it.
func TestReadmeQuickstart(t *testing.T) {
	cmds := readmeCommands(t)
	if len(cmds) < 10 {
		t.Fatalf("found only %d README commands; the parser is out of step with README.md", len(cmds))
	}

	mockAddr := freeAddr(t)
	mockCmd := exec.Command(gwBin, "mock", "-addr", mockAddr, "-model-suffix", "-2024-08-06")
	if err := mockCmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = mockCmd.Process.Kill(); _ = mockCmd.Wait() })
	mockBase := "http://" + mockAddr
	waitHTTP(t, mockBase+"/v1/models")

	env := append(append([]string{}, exampleEnv...), "MOCK_BASE="+mockBase, "GW_ADMIN_KEY=demo-admin-key")
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	adminAddr, gatewayAddr := freeAddr(t), freeAddr(t)
	g := startGW(t, "../../examples/gw.yaml", "--admin-listen", adminAddr, "--gateway-listen", gatewayAddr, "--data-dir", t.TempDir())

	// The README's addresses are make run's; the test's processes listen
	// on free ports.
	repl := strings.NewReplacer("localhost:8080", g.addr, "127.0.0.1:8080", g.addr,
		"localhost:9999", mockAddr, "127.0.0.1:9999", mockAddr, "127.0.0.1:9180", adminAddr, "./bin/gw", gwBin)
	vars := []string{}
	ran, compared := 0, 0
	for _, c := range cmds {
		cmd := repl.Replace(c.cmd)
		if name, _, ok := strings.Cut(cmd, "=$("); ok && !strings.ContainsAny(name, " \t") {
			// NAME=$(...): evaluate it once and pass it to the later commands.
			v, err := shell(cmd+`; printf %s "$`+name+`"`, vars).Output()
			if err != nil {
				t.Fatalf("README.md:%d: %s: %v", c.line, c.cmd, err)
			}
			vars = append(vars, name+"="+string(v))
			continue
		}
		if !strings.HasPrefix(cmd, "curl ") {
			continue
		}
		ran++
		piped := strings.Contains(cmd, "|")
		if !piped {
			cmd = "curl -w '\\n%{http_code}' " + strings.TrimPrefix(cmd, "curl ")
		}
		var out []byte
		var err error
		// The exporter example reads what the exporter delivered within
		// its flush interval: retry such reads briefly.
		for deadline := time.Now().Add(5 * time.Second); ; {
			out, err = shell("set -o pipefail; "+cmd, vars).Output()
			if err == nil || time.Now().After(deadline) {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		if err != nil {
			t.Fatalf("README.md:%d: %s: %v\n%s", c.line, c.cmd, err, out)
		}
		if piped {
			continue
		}
		body, code := splitStatus(out)
		if c.expect != "" {
			if !sameJSON(body, []byte(c.expect)) {
				t.Fatalf("README.md:%d: %s\nanswered %d %s\nthe README shows %s", c.line, c.cmd, code, body, c.expect)
			}
			compared++
			continue
		}
		if code < 200 || code > 299 {
			t.Fatalf("README.md:%d: %s\nanswered %d %s", c.line, c.cmd, code, body)
		}
	}
	if ran < 10 || compared == 0 {
		t.Fatalf("ran only %d curl commands, %d with a shown answer", ran, compared)
	}
	t.Logf("%d README commands answered as shown (%d with a shown answer)", ran, compared)
}

func shell(script string, vars []string) *exec.Cmd {
	cmd := exec.Command("bash", "-c", script)
	cmd.Env = append(os.Environ(), vars...)
	cmd.Dir = "../.."
	return cmd
}

// splitStatus separates curl's body from the status its -w appended.
func splitStatus(out []byte) ([]byte, int) {
	i := bytes.LastIndexByte(out, '\n')
	if i < 0 {
		return out, 0
	}
	code, _ := strconv.Atoi(string(out[i+1:]))
	return out[:i], code
}

func sameJSON(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return bytes.Equal(xa, ya)
}

func waitHTTP(t *testing.T, url string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if resp, err := http.Get(url); err == nil {
			resp.Body.Close()
			return
		}
	}
	t.Fatalf("%s did not answer", url)
}
