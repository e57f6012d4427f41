package main

import (
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"time"

	"gw/admin/startup"
)

// healthcheck GETs /livez (or /readyz with --ready) on the local gw and exits
// 0 on 200, 1 otherwise. It exists because the container image has no shell,
// curl or wget: a HEALTHCHECK or exec probe can only run gw itself.
func healthcheck(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("healthcheck", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "", "host:port of gw's status endpoints; empty: status.listen, else listen, from GW_CONFIG and GW_* like gw serve")
	ready := fs.Bool("ready", false, "check /readyz (a snapshot is active) instead of /livez (the process answers)")
	timeout := fs.Duration("timeout", 2*time.Second, "give up after this long")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "gw healthcheck: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	target := *addr
	if target == "" {
		var err error
		if target, err = statusAddr(os.LookupEnv); err != nil {
			fmt.Fprintln(stderr, "gw healthcheck:", err)
			return 1
		}
	}
	path := "/livez"
	if *ready {
		path = "/readyz"
	}
	url := "http://" + dialable(target) + path
	client := &http.Client{Timeout: *timeout}
	resp, err := client.Get(url)
	if err != nil {
		fmt.Fprintf(stderr, "gw healthcheck: cannot reach %s: %v\n", url, err)
		return 1
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		fmt.Fprintf(stderr, "gw healthcheck: %s answered %d: %s", url, resp.StatusCode, body)
		return 1
	}
	fmt.Fprintf(stdout, "%s: %s", url, body)
	return 0
}

// statusAddr is the listener that serves /livez for the same settings gw
// serve reads (defaults < GW_CONFIG file < GW_* env); flags given to serve
// are not visible here, so a deployment that sets listeners by flag passes
// --addr.
func statusAddr(lookup func(string) (string, bool)) (string, error) {
	cfg := startup.Defaults()
	if p, ok := lookup("GW_CONFIG"); ok && p != "" {
		if err := startup.LoadFile(&cfg, p); err != nil {
			return "", err
		}
	}
	if err := startup.ApplyEnv(&cfg, lookup); err != nil {
		return "", err
	}
	if cfg.StatusListen != "" {
		return cfg.StatusListen, nil
	}
	return cfg.Listen, nil
}

// dialable turns a listen address into one a client can dial: a wildcard
// or empty host (":8080", "0.0.0.0:8080", "[::]:8080") means this machine.
func dialable(listen string) string {
	host, port, err := net.SplitHostPort(listen)
	if err != nil {
		return listen
	}
	switch host {
	case "", "0.0.0.0":
		host = "127.0.0.1"
	case "::":
		host = "::1"
	}
	return net.JoinHostPort(host, port)
}
