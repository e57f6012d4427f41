package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"regexp"
	"runtime"
	"runtime/debug"
	"strings"

	"gw/perf/mock"
)

// commands are gw's subcommands as completion offers them.
var commands = []string{"serve", "validate", "version", "mock", "token", "completion", "healthcheck", "schema", "help"}

// commandFlags returns the flag names of a subcommand, read from its own
// flag set's help output so completion never drifts from the flags.
func commandFlags(cmd string) []string {
	var buf bytes.Buffer
	switch cmd {
	case "serve":
		loadStartup([]string{"-h"}, &buf)
	case "validate":
		validate([]string{"-h"}, &buf, &buf)
	case "token":
		tokenCmd([]string{"-h"}, &buf, &buf)
	case "healthcheck":
		healthcheck([]string{"-h"}, &buf, &buf)
	case "mock":
		mock.Usage(&buf)
	case "version":
		return []string{"m"}
	case "completion", "schema":
		return nil
	}
	var out []string
	sc := bufio.NewScanner(&buf)
	for sc.Scan() {
		if m := flagLine.FindStringSubmatch(sc.Text()); m != nil {
			out = append(out, m[1])
		}
	}
	return out
}

var flagLine = regexp.MustCompile(`^  -([A-Za-z0-9][A-Za-z0-9_.-]*)`)

// completion prints a shell completion script: gw completion bash|zsh|fish.
func completion(args []string, stdout, stderr io.Writer) int {
	if len(args) != 1 {
		fmt.Fprintln(stderr, "usage: gw completion bash|zsh|fish")
		return 2
	}
	var sb strings.Builder
	switch args[0] {
	case "bash":
		sb.WriteString("# gw completion for bash: source <(gw completion bash), or save it under\n# /etc/bash_completion.d/gw\n_gw() {\n")
		sb.WriteString("  local cur=${COMP_WORDS[COMP_CWORD]} opts=\n")
		sb.WriteString("  if [ \"$COMP_CWORD\" -eq 1 ]; then COMPREPLY=($(compgen -W \"" + strings.Join(commands, " ") + "\" -- \"$cur\")); return; fi\n")
		sb.WriteString("  case \"${COMP_WORDS[1]}\" in\n")
		for _, c := range commands {
			if c == "completion" {
				sb.WriteString("    completion) COMPREPLY=($(compgen -W \"bash zsh fish\" -- \"$cur\")); return;;\n")
				continue
			}
			if fl := commandFlags(c); len(fl) > 0 {
				sb.WriteString("    " + c + ") opts=\"" + dashed(fl, "--") + "\";;\n")
			}
		}
		sb.WriteString("  esac\n")
		sb.WriteString("  if [[ $cur == -* ]]; then COMPREPLY=($(compgen -W \"$opts\" -- \"$cur\")); else COMPREPLY=($(compgen -f -- \"$cur\")); fi\n}\n")
		sb.WriteString("complete -o filenames -F _gw gw\n")
	case "zsh":
		sb.WriteString("#compdef gw\n# gw completion for zsh: source <(gw completion zsh), or save it as _gw in $fpath\n_gw() {\n")
		sb.WriteString("  if (( CURRENT == 2 )); then compadd -- " + strings.Join(commands, " ") + "; return; fi\n")
		sb.WriteString("  local -a opts\n  case $words[2] in\n")
		for _, c := range commands {
			if c == "completion" {
				sb.WriteString("    completion) compadd -- bash zsh fish; return;;\n")
				continue
			}
			if fl := commandFlags(c); len(fl) > 0 {
				sb.WriteString("    " + c + ") opts=(" + dashed(fl, "--") + ");;\n")
			}
		}
		sb.WriteString("  esac\n  if [[ $PREFIX == -* ]]; then compadd -- $opts; else _files; fi\n}\n")
		sb.WriteString("if [[ $zsh_eval_context[-1] == loadautofunc ]]; then _gw \"$@\"; else compdef _gw gw; fi\n")
	case "fish":
		sb.WriteString("# gw completion for fish: gw completion fish > ~/.config/fish/completions/gw.fish\n")
		sb.WriteString("complete -c gw -f -n __fish_use_subcommand -a '" + strings.Join(commands, " ") + "'\n")
		sb.WriteString("complete -c gw -f -n '__fish_seen_subcommand_from completion' -a 'bash zsh fish'\n")
		for _, c := range commands {
			for _, f := range commandFlags(c) {
				sb.WriteString("complete -c gw -n '__fish_seen_subcommand_from " + c + "' -l " + f + "\n")
			}
		}
	default:
		fmt.Fprintf(stderr, "gw completion: unknown shell %q (bash, zsh, fish)\n", args[0])
		return 2
	}
	fmt.Fprint(stdout, sb.String())
	return 0
}

func dashed(names []string, prefix string) string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = prefix + n
	}
	return strings.Join(out, " ")
}

// versionCmd prints the version, the toolchain and platform, the build's
// VCS settings and, with -m, every module compiled in.
func versionCmd(args []string, stdout io.Writer) int {
	fmt.Fprintf(stdout, "gw %s (%s %s/%s)\n", version, runtime.Version(), runtime.GOOS, runtime.GOARCH)
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return 0
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision", "vcs.time", "vcs.modified", "CGO_ENABLED", "GOAMD64", "GOARM64", "-tags", "-trimpath":
			fmt.Fprintf(stdout, "  %-13s %s\n", s.Key, s.Value)
		}
	}
	if len(args) > 0 && (args[0] == "-m" || args[0] == "--m") {
		fmt.Fprintf(stdout, "modules:\n  %s %s\n", bi.Main.Path, bi.Main.Version)
		for _, d := range bi.Deps {
			v := d.Version
			if d.Replace != nil {
				v += " => " + d.Replace.Path + " " + d.Replace.Version
			}
			fmt.Fprintf(stdout, "  %s %s\n", d.Path, v)
		}
	}
	return 0
}
