// Package limiter enforces the `rate_limit` blocks of models and caller
// keys, rate_limit_policies and api_keys `mcp_rate_limits`: fixed request
// and token windows and concurrency semaphores, with a lock-free local
// store and a Redis store shared by replicas. It imports nothing from edge,
// admin or adapters: callers pass plain limit values and string subjects
// (derived IDs).
//
// # Windows
//
// Windows are fixed and aligned to the Unix epoch: rps/tps 1 s, rpm/tpm
// 60 s, rph/tph 3,600 s, rpd/tpd 86,400 s, and rpw, a request window of any
// whole number of seconds given per entry (Reservation.AddWindow; one rpw
// length per subject). A counter is keyed
// "<subject>/<kind>/<window start in unix seconds>", e.g.
// "7f0c…/rpm/1767225600" or "7f0c…/rpw7/1767225598" (in Redis behind
// Config.Redis.KeyPrefix, expiring 5 s after its window ends). State is
// keyed by Subject, never by snapshot, so counters survive reloads.
//
// # Request path
//
//	var r limiter.Reservation // in the request's pooled state; r.Reset() before reuse
//	r.AddLimits(limiter.Subject{ID: keyID}, limiter.Limits(key.RateLimit))
//	r.AddLimits(limiter.Subject{ID: modelID}, limiter.Limits(model.RateLimit))
//	r.Add(limiter.Subject{Scope: policyID, ID: teamID}, limiter.RPM, 600)
//
//	var slot limiter.Slot
//	if d := lim.Acquire(&slot, limiter.Subject{ID: keyID}, limits.Concurrency); !d.Allowed {
//		return reject429(d)
//	}
//	defer slot.Release()
//
//	d := lim.Reserve(&r, estimate) // all windows, all or nothing
//	buf = d.AppendHeaders(buf[:0], setHeader)
//	if !d.Allowed {
//		return reject429(d)
//	}
//	defer func() { lim.Settle(&r, actualTokens) }() // 0 when the request failed
//
// Reserve checks and charges every window of a request at once: on Redis
// one Lua script call (atomic, exact across replicas); locally a read-only
// pre-check and a CAS pass with rollback (exact: never above a limit; a
// request racing a rollback may be refused a few ns early). Token windows
// are reserve-then-settle: Reserve charges the estimate, Settle the
// difference to the actual use. See Reserve for the estimate contract.
//
// Concurrency slots are per process (a semaphore per Subject), also with a
// shared store: in-flight counts cannot be leaked by a crashed replica.
//
// # Shared store and degraded mode
//
// With Config.Redis a Limiter counts in Redis. A failed call counts that
// request locally (never an error to the caller); FailureThreshold (5)
// consecutive failures open the circuit and every replica counts alone
// (each enforcing the full limit, so the cluster admits up to replicas ×
// limit); after ProbeInterval (30 s) a background probe (a fresh client,
// dialled and PINGed) decides: success reattaches with the new client, so no
// connection the outage broke is used again; failure keeps the circuit open
// another interval. A store unreachable at
// startup starts the Limiter with the circuit open. A warning is logged when
// the circuit opens and repeated every WarnInterval (5 minutes) while the
// store is not connected; recovery is logged at Info. There is no permanent
// switch. State reports local / connected / degraded / circuit_open for
// metrics. Local counts made while degraded are not copied to Redis. A
// call that timed out may still be applied by Redis afterwards, so that
// request counts twice (an error towards refusing early).
//
// RedisConfig.NoLocalFallback replaces the local fallback by a Decision
// with Unavailable set (nothing counted): the caller refuses or admits
// (limit-count's allow_degradation). RedisConfig.ClusterNodes counts in a
// Redis Cluster: each script call goes to the primary of its keys' slot,
// so a reservation must keep its keys in one slot (a single window always
// does; one spanning slots is counted as the fallback says, without
// touching the circuit). RedisConfig.TLS dials over TLS.
//
// # Headers
//
// Decision.AppendHeaders writes OpenAI's x-ratelimit-{limit,remaining,reset}-
// {requests,tokens} and, on refusals, retry-after. Resets use
// time.Duration.String form rounded up to the millisecond ("20ms", "1s",
// "6m0s"); retry-after is whole seconds, rounded up.
package limiter
