// Package balancer chooses the upstream targets of a routing model: tag
// narrowing, priority tiers, exclusion, and six strategies (round_robin,
// consistent_hash, failover, least_cost, least_latency, least_busy), plus the
// cooldown, latency and in-flight state they read. It is a leaf: it takes
// plain values and imports nothing from edge, admin or adapters.
//
// # Shape
//
// The snapshot compiler builds one immutable Group per routing model
// (NewGroup) from Targets: the derived ID of each direct model, weight,
// priority, tags, cost and cooldown block. Per-model runtime State lives in a
// process-wide Registry keyed by derived ID, so cooldowns, latency averages
// and in-flight counts survive reloads, reordering, and are shared by every
// group that dispatches to the same model.
//
// Per request the caller fills a reused Request (hash key, tags header,
// skipped targets) and calls Pick, which returns one target index, or Order,
// which writes the whole attempt order into a reused buffer. Neither
// allocates. Both narrow first, then let the group's Strategy order what is
// left:
//
//  1. Tags (header TagsHeader, "x-gw-tags", comma-separated, exact match):
//     if no target has tags, no filtering. A tagged request keeps the
//     targets sharing at least one tag, else the targets tagged "default",
//     else none. An untagged request keeps the "default" targets, else all.
//  2. Tiers: the highest priority with a usable target wins; lower tiers,
//     and the backup tier -1 last, only when every higher target is
//     skipped.
//  3. Skip: targets the caller rules out (health, cooldown via MarkCooling,
//     allowed_cidrs, already tried).
//
// The failover loop is therefore: Pick, try, on failure add the target to
// Request.Skip and Pick again (see Example). It walks the strategy's order,
// then the next tier. Eligible lists the tag-eligible targets in declared
// order for routing.when_all_unavailable try_anyway.
//
// # Decisions
//
// Tie-breaks: declared order everywhere. failover is declared order;
// least_cost, least_latency and least_busy sort by their key, then by
// position; round_robin takes nginx's first maximum; consistent_hash ties
// only between equal IDs and then takes the lower position.
//
// round_robin is nginx's smooth weighted round robin (5,1,1 gives
// a a b a c a a). When the whole tier is usable the sequence is precomputed
// and a pick is one atomic increment, lock-free and O(1); a narrowed tier
// runs nginx's O(n) loop under a per-tier mutex. BenchmarkRoundRobinPath
// measures both.
//
// consistent_hash is weighted rendezvous hashing (HRW) over 2^14 key slots:
// XXH64 of the key picks a slot, each target scores it w / -ln(u) from its
// ID's hash, the best score wins, and each slot caches its top four. A pick
// is O(1). Adding a target moves only the keys it wins (its weight share,
// 1/n for equal weights); placement ignores declared order. HRW was chosen
// over a ring because the ring needs many virtual nodes to hold a 1:3 split
// within ±3% and changes more keys when the vnode budget is rescaled. The
// default key is header RoutingKeyHeader ("x-gw-routing-key"), then the
// caller's API key (HashKey, DefaultHashSources). Keyless requests spread by
// weight.
//
// least_latency keeps an EWMA per model with α = 0.3 per observation
// (EWMAAlpha): an observation's weight halves every ~1.94 later ones. It
// counts observations, not time, because LLM latencies arrive at uneven and
// often low rates per model: a count-based average reacts equally fast at 1
// or 1,000 requests/s. A half-life in time would react slowly on quiet
// models, and it needs a clock on the pick path plus a two-word (value and
// timestamp) update that cannot be one CAS. Targets never observed sort
// first, so new models get tried. The caller observes successful attempts
// only, using time to first byte. Limitation: a model that stops getting
// traffic keeps its last average until failover or exclusions send it
// requests again.
//
// least_busy divides the model's in-flight attempts (Acquire/Release,
// atomic counters) by max(weight, 1).
//
// Cooldown (State.Trip) follows the model's cooldown block. A usable
// Retry-After (seconds or HTTP-date; ParseRetryAfter) capped by Max, else
// Default. Default 0 turns cooldown off, Retry-After included. A
// Retry-After of 0 or a past date means retry now, so no cooldown. A
// cooldown is extended, never shortened. CoolingDown is one atomic load.
//
// Hashes are XXH64 (github.com/cespare/xxhash/v2).
package balancer
