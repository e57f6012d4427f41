package balancer

// DisableRoundRobinSequence makes a round_robin group take the mutex path
// for every pick (the benchmark baseline and the equivalence test).
func DisableRoundRobinSequence(g *Group) {
	rr := g.strat.(*roundRobin)
	for i := range rr.tiers {
		rr.tiers[i].seq = nil
	}
}

// FastMod exposes the round-robin remainder.
var FastMod = fastmod
