// Command gwperf runs the perf suite (`make perf`): every scenario of
// perf/suite against the direct-to-mock baseline, with the figures beside
// perf/budgets.yaml, written to perf/results/latest.{json,md}.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"time"

	"gw/perf/suite"
)

func main() {
	var o suite.Options
	flag.StringVar(&o.GWBin, "gw", "bin/gw", "the gw binary")
	flag.StringVar(&o.MockBin, "mock", "", "the binary whose `gw mock` is the upstream (default: -gw)")
	flag.StringVar(&o.Budgets, "budgets", "perf/budgets.yaml", "budgets file")
	flag.StringVar(&o.OutDir, "out", "perf/results", "where latest.json and latest.md go")
	flag.DurationVar(&o.Duration, "duration", 8*time.Second, "measured time of each load run")
	flag.DurationVar(&o.Warmup, "warmup", 2*time.Second, "warm-up of each load run")
	flag.IntVar(&o.GWCore, "gw-core", 0, "core gw is pinned to (-1: none)")
	flag.IntVar(&o.MockCore, "mock-core", 1, "core of the mock upstream (run gwperf on it too)")
	flag.StringVar(&o.FloorBin, "floor", "", "perf/cmd/floorproxy, run beside gw in scenario 8's buffered rounds (\"\": not run)")
	flag.StringVar(&o.MockAddr, "mock-addr", "", "address of the mock of the shared-core scenarios 8-10, for peers configured against it (default: a free port)")
	flag.Func("peer", "another OpenAI-compatible gateway beside gw in scenario 8, repeatable: name=URL[,key=K][,model=M][,stream-model=M][,pid=N]\n"+
		"(its model must reach <mock>/v1, its stream-model <mock>/knobs/chunks=20/v1; pid gives its CPU per request)", func(v string) error {
		p, err := suite.ParsePeer(v)
		if err == nil {
			o.Peers = append(o.Peers, p)
		}
		return err
	})
	only := flag.String("only", "", `run some scenarios and print their figures without writing the report: "soak", "closed" (8-10, shared cores), "cache" (11), "gateway" (12), "upload-rss" or "pinned" (idle RSS and scenario 1 at 2k)`)
	soakRequests := flag.Int("soak-requests", suite.SoakRequests, "streams of the soak scenario with -only soak")
	flag.Parse()
	o.Log = func(format string, args ...any) { fmt.Fprintf(os.Stderr, format+"\n", args...) }
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	start := time.Now()
	run := suite.Run
	switch *only {
	case "":
	case "closed":
		run = suite.RunClosed
	case "pinned":
		run = suite.RunPinned
	case "cache":
		run = suite.RunCache
	case "gateway":
		run = suite.RunGateway
	case "upload-rss":
		run = suite.RunUploadRSS
	case "soak":
		run = func(ctx context.Context, o suite.Options) (*suite.Report, error) {
			return suite.RunSoak(ctx, o, *soakRequests)
		}
	default:
		fmt.Fprintf(os.Stderr, "gwperf: unknown scenario %q for -only\n", *only)
		os.Exit(2)
	}
	rep, err := run(ctx, o)
	if rep != nil {
		fmt.Print(rep.Markdown())
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "gwperf:", err)
		os.Exit(1)
	}
	if *only != "" {
		fmt.Fprintf(os.Stderr, "scenario %s done in %s; no report written\n", *only, time.Since(start).Round(time.Second))
		return
	}
	fmt.Fprintf(os.Stderr, "perf suite done in %s; wrote %s/latest.{json,md}\n", time.Since(start).Round(time.Second), o.OutDir)
}
