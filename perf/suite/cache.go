package suite

// Scenario 11, the response cache: the same buffered chat request at a
// fixed rate, straight to the mock (whose answer takes cacheUpstreamDelay,
// a fast real model's latency) and through gw with an exact memory cache
// policy on the alias. After the first request every gw answer is a hit:
// no upstream call, so a hit must be faster than the direct call. A miss
// reference run (Cache-Control: no-cache on every request) shows what the
// cache stage costs on the way to the upstream.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"gw/perf/load"
)

const (
	cacheUpstreamDelay = "5ms"
	cacheRate          = 1000
)

func cacheFile() string {
	return `_format_version: "1"
provider_keys:
  - {display_name: mock-slow, api_key: "${PERF_UPSTREAM_KEY}", api_base: "${PERF_MOCK}/knobs/latency=` + cacheUpstreamDelay + `/v1"}
api_keys:
  - {display_name: perf, key_env: PERF_CALLER_KEY, allowed_models: ["*"]}
models:
  - {display_name: gpt-cached, provider: openai, model_name: gpt-4o, provider_key: mock-slow}
cache_policies:
  - {name: perf-cache, backend: memory, ttl_seconds: 3600, models: [gpt-cached]}
`
}

// cacheScenario runs scenario 11 against a gw of its own.
func cacheScenario(ctx context.Context, o Options, rep *Report, bud *Budgets, tmp string, env []string,
	run func(string, load.Config) (*load.Result, error), mockBase string) error {
	o.Log("scenario 11: cache hits at %d req/s, upstream latency %s", cacheRate, cacheUpstreamDelay)
	file := filepath.Join(tmp, "cache.yaml")
	if err := os.WriteFile(file, []byte(cacheFile()), 0o600); err != nil {
		return err
	}
	gw, err := StartGW(o.GWBin, o.GWCore, file, env)
	if err != nil {
		return err
	}
	defer gw.Stop()
	cfg := func(target, model string, h ...load.Header) load.Config {
		return load.Config{Target: target, APIKey: "perf-caller", Model: model, Rate: cacheRate, Connections: 512, Headers: h}
	}
	d, err := run("s11-direct", cfg(mockBase+"/knobs/latency="+cacheUpstreamDelay+"/v1", "gpt-4o"))
	if err != nil {
		return err
	}
	miss, err := run("s11-gw-miss", cfg("http://"+gw.Addr+"/v1", "gpt-cached", load.Header{Name: "Cache-Control", Value: "no-cache"}))
	if err != nil {
		return err
	}
	hit, err := run("s11-gw-hit", cfg("http://"+gw.Addr+"/v1", "gpt-cached"))
	if err != nil {
		return err
	}
	const sc = "11 cache hit 1k req/s"
	if d.LatencyUS.P50 > 0 {
		rep.add(Figure{Scenario: sc, Name: "hit p50 / direct p50", Value: float64(hit.LatencyUS.P50) / float64(d.LatencyUS.P50), Unit: "ratio",
			Budget: b(bud.CacheHitRatioMax), Max: true,
			Note: fmt.Sprintf("hit p50 %d µs, p99 %d µs; direct (upstream latency %s) p50 %d µs, p99 %d µs", hit.LatencyUS.P50, hit.LatencyUS.P99,
				cacheUpstreamDelay, d.LatencyUS.P50, d.LatencyUS.P99)})
	}
	rep.add(Figure{Scenario: sc, Name: "miss added p50 (no-cache: keyed, fetched, stored)", Value: float64(miss.LatencyUS.P50 - d.LatencyUS.P50), Unit: "µs"})
	rep.add(Figure{Scenario: sc, Name: "gw errors (hit run)", Value: float64(hit.Errors + miss.Errors), Unit: "requests"})
	return nil
}

// RunCache runs only scenario 11 (gwperf -only cache).
func RunCache(ctx context.Context, o Options) (*Report, error) {
	sess, err := openSession(o)
	if err != nil {
		return nil, err
	}
	defer sess.close()
	env := []string{"PERF_UPSTREAM_KEY=sk-perf", "PERF_CALLER_KEY=perf-caller", "PERF_MOCK=http://" + sess.mock.Addr}
	err = cacheScenario(ctx, o, sess.rep, &sess.bud, sess.tmp, env, runner(ctx, o, sess.rep), "http://"+sess.mock.Addr)
	return sess.rep, err
}
