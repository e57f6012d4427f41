// Package balancer selects the upstream target of a routing model: smooth
// weighted round robin, consistent hash, failover, least_cost, least_latency
// and least_busy over a precomputed target table, with cooldown and health
// exclusion. It imports nothing from edge, admin or adapters.
//
// Until the strategies land, routing groups dispatch in declared (failover)
// order; see docs/ARCHITECTURE.md.
package balancer
