package main

import (
	"encoding/json"
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
	format := fs.String("format", "text", "output format: text (errors on stderr, one per line, as file:line:column: ...) or json (one report on stdout, for tools and CI)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() != 1 || (*format != "text" && *format != "json") {
		fmt.Fprintln(stderr, "usage: gw validate [--ids] [--format text|json] FILE")
		return 2
	}
	path := fs.Arg(0)
	res := resources.LoadFile(path, resources.OSEnv)
	var snap *snapshot.Snapshot
	var compileErr error
	if len(res.Errors) == 0 {
		// Compile as gw serve would, to list what loads but has no effect
		// in this build; warnings only, the exit status stays 0.
		// Guardrails compile too: a custom script that does not compile fails here.
		opt := snapshot.DefaultOptions()
		opt.Guardrails = kinds.Table()
		snap, compileErr = snapshot.Compile(res.Resources, opt)
	}
	if *format == "json" {
		return validateJSON(path, res, snap, compileErr, stdout)
	}
	for _, w := range res.Warnings {
		fmt.Fprintln(stderr, "warning: "+w.At(path))
	}
	if len(res.Errors) > 0 {
		for _, e := range res.Errors {
			fmt.Fprintln(stderr, e.At(path))
		}
		return 1
	}
	if compileErr != nil {
		fmt.Fprintln(stderr, path+": "+compileErr.Error())
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

// validateReport is the --format json output.
type validateReport struct {
	File       string                `json:"file"`
	Valid      bool                  `json:"valid"`
	Errors     []validateIssue       `json:"errors"`
	Warnings   []validateIssue       `json:"warnings"`
	Unenforced []snapshot.Unenforced `json:"unenforced"`
	Counts     map[string]int        `json:"counts,omitempty"`
	IDs        []reportID            `json:"ids,omitempty"`
}

type reportID struct {
	Collection string `json:"collection"`
	Identity   string `json:"identity"`
	ID         string `json:"id"`
}

type validateIssue struct {
	Message    string `json:"message"` // the whole line, as the text format prints it after file:line:column
	Collection string `json:"collection,omitempty"`
	Index      *int   `json:"index,omitempty"`
	Entry      string `json:"entry,omitempty"` // identity, e.g. display_name=gpt
	Path       string `json:"path,omitempty"`
	Line       int    `json:"line,omitempty"`
	Column     int    `json:"column,omitempty"`
}

func reportIssues(list []resources.Error) []validateIssue {
	out := make([]validateIssue, 0, len(list))
	for _, e := range list {
		is := validateIssue{Message: e.String(), Collection: e.Collection, Path: e.Path, Line: e.Line, Column: e.Column}
		if e.Index >= 0 {
			i := e.Index
			is.Index = &i
		}
		if e.ID != "" {
			is.Entry = e.IDField + "=" + e.ID
		}
		out = append(out, is)
	}
	return out
}

// validateJSON writes the whole report as one JSON document on stdout;
// the exit status is the text format's.
func validateJSON(path string, res *resources.Result, snap *snapshot.Snapshot, compileErr error, stdout io.Writer) int {
	rep := validateReport{File: path, Errors: reportIssues(res.Errors), Warnings: reportIssues(res.Warnings), Unenforced: []snapshot.Unenforced{}}
	if compileErr != nil {
		rep.Errors = append(rep.Errors, validateIssue{Message: compileErr.Error()})
	}
	if snap != nil {
		rep.Unenforced = append(rep.Unenforced, snap.Unenforced...)
		rep.Counts = map[string]int{}
		for _, c := range res.Resources.Counts() {
			rep.Counts[c.Collection] = c.Count
		}
		for _, id := range res.IDs {
			rep.IDs = append(rep.IDs, reportID{id.Collection, id.Identity, id.ID})
		}
	}
	rep.Valid = len(rep.Errors) == 0
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(rep); err != nil {
		return 1
	}
	if !rep.Valid {
		return 1
	}
	return 0
}
