// Command gw is the gateway binary: gw serve, gw validate, gw version, gw mock, gw token,
// gw completion, gw healthcheck, gw schema.
package main

import (
	"fmt"
	"io"
	"os"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

const usage = `usage:
  gw serve --resources-file FILE [--listen ADDR] [--config STARTUP.yaml] [flags]
  gw validate [--ids] FILE
  gw version [-m]          version and build settings; -m lists every module compiled in
  gw schema                print the JSON Schema of the resource file (editors, CI)
  gw completion bash|zsh|fish
                           print a shell completion script
  gw healthcheck [--addr HOST:PORT] [--ready]
                           exit 0 when the local gw answers /livez (/readyz) with 200
  gw mock [flags]          run the mock upstream provider (tests, demos, perf)
  gw token --secret-env NAME [--sub S] [--aud A] [--iss I] [--ttl 1h]
                           print a JWT for a shared-secret oidc_providers entry (demos)

Run "gw serve -h" for every startup flag.
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "serve":
		return serve(args[1:], stdout, stderr)
	case "validate":
		return validate(args[1:], stdout, stderr)
	case "version", "--version", "-v":
		return versionCmd(args[1:], stdout)
	case "completion":
		return completion(args[1:], stdout, stderr)
	case "healthcheck":
		return healthcheck(args[1:], stdout, stderr)
	case "schema":
		return schemaCmd(args[1:], stdout, stderr)
	case "mock":
		return mockCmd(args[1:], stderr)
	case "token":
		return tokenCmd(args[1:], stdout, stderr)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	}
	fmt.Fprintf(stderr, "gw: unknown command %q\n%s", args[0], usage)
	return 2
}
