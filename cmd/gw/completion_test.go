package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestCompletionBash sources the bash script in a real bash and completes
// a subcommand, a serve flag read from the startup table, and a mock flag.
func TestCompletionBash(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run([]string{"completion", "bash"}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	script := filepath.Join(t.TempDir(), "gw.bash")
	if err := os.WriteFile(script, out.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ words, want string }{
		{"gw se", "serve"},
		{"gw serve --resources-f", "--resources-file"},
		{"gw serve --admin-l", "--admin-listen"},
		{"gw mock --chunk-d", "--chunk-delay"},
		{"gw completion z", "zsh"},
	} {
		cmd := exec.Command("bash", "-c", `source "$0"; COMP_WORDS=($1); COMP_CWORD=$((${#COMP_WORDS[@]}-1)); _gw; printf '%s\n' "${COMPREPLY[@]}"`, script, tc.words)
		got, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", tc.words, err, got)
		}
		if strings.TrimSpace(string(got)) != tc.want {
			t.Fatalf("completing %q: %q; want %q", tc.words, got, tc.want)
		}
	}
}

// TestCompletionShells: every shell's script is produced and, where the
// shell is installed, parses; an unknown shell is a usage error.
func TestCompletionShells(t *testing.T) {
	for _, sh := range []string{"bash", "zsh", "fish"} {
		var out, errb bytes.Buffer
		if code := run([]string{"completion", sh}, &out, &errb); code != 0 || !strings.Contains(out.String(), "resources-file") {
			t.Fatalf("%s: exit %d, %d bytes: %s", sh, code, out.Len(), errb.String())
		}
		bin, err := exec.LookPath(sh)
		if err != nil {
			continue // bash is checked above; zsh and fish only where installed
		}
		cmd := exec.Command(bin, "-n")
		cmd.Stdin = &out
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s -n: %v\n%s", sh, err, b)
		}
	}
	var out, errb bytes.Buffer
	if code := run([]string{"completion", "tcsh"}, &out, &errb); code != 2 || !strings.Contains(errb.String(), "unknown shell") {
		t.Fatalf("tcsh: exit %d, %q", code, errb.String())
	}
}

// TestVersion: the version line, and with -m the module list.
func TestVersion(t *testing.T) {
	var out bytes.Buffer
	if code := run([]string{"version", "-m"}, &out, &out); code != 0 || !strings.HasPrefix(out.String(), "gw ") {
		t.Fatalf("exit %d: %s", code, out.String())
	}
	// A test binary carries its module list too.
	if !strings.Contains(out.String(), "github.com/valyala/fasthttp") {
		t.Fatalf("no module list:\n%s", out.String())
	}
}
