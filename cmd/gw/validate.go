package main

import (
	"flag"
	"fmt"
	"io"
	"strings"

	"gw/admin/resources"
	"gw/admin/snapshot"
	"gw/edge/guard/kinds"
)

// validate runs the full load pipeline on FILE. Exit 0 with a one-line
// summary on stdout; exit 1 with one error per line on stderr.
func validate(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("validate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	ids := fs.Bool("ids", false, "also print every entry's derived ID (collection, identity, id)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() != 1 {
		fmt.Fprintln(stderr, "usage: gw validate [--ids] FILE")
		return 2
	}
	path := fs.Arg(0)
	res := resources.LoadFile(path, resources.OSEnv)
	for _, w := range res.Warnings {
		fmt.Fprintln(stderr, "warning: "+w.String())
	}
	if len(res.Errors) > 0 {
		for _, e := range res.Errors {
			fmt.Fprintln(stderr, e.String())
		}
		return 1
	}
	// Compile as gw serve would, to list what loads but has no effect in
	// this build; warnings only, the exit status stays 0.
	// Guardrails compile too: a custom script that does not compile fails here.
	opt := snapshot.DefaultOptions()
	opt.Guardrails = kinds.Table()
	snap, err := snapshot.Compile(res.Resources, opt)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	for _, u := range snap.Unenforced {
		fmt.Fprintln(stderr, "warning: "+u.String())
	}
	fmt.Fprintln(stdout, summary(path, res.Resources))
	if *ids {
		for _, id := range res.IDs {
			fmt.Fprintf(stdout, "%s\t%s\t%s\n", id.Collection, id.Identity, id.ID)
		}
	}
	return 0
}

func summary(path string, r *resources.Resources) string {
	var b strings.Builder
	b.WriteString("ok: ")
	b.WriteString(path)
	b.WriteString(":")
	for _, c := range r.Counts() {
		fmt.Fprintf(&b, " %s=%d", c.Collection, c.Count)
	}
	if len(r.UnknownKinds) > 0 {
		fmt.Fprintf(&b, " (unknown_kinds=%d)", len(r.UnknownKinds))
	}
	return b.String()
}
