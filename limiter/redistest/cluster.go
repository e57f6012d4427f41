package redistest

import (
	"errors"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Cluster is a Redis Cluster of three primaries (no replicas) on free
// ports, each a redis-server process with cluster mode on, slots spread
// by `redis-cli --cluster create`. Tests skip when redis-server or
// redis-cli is missing (both come with `apt-get install -y redis-server`).
type Cluster struct {
	Nodes []*Server
}

// StartCluster starts the cluster, waits for cluster_state:ok on every
// node and stops it when the test ends.
func StartCluster(tb testing.TB) *Cluster {
	tb.Helper()
	if Binary() == "" {
		tb.Skip("redis-server not found in PATH; install it (apt-get install -y redis-server) to run the cluster tests")
	}
	cli, err := exec.LookPath("redis-cli")
	if err != nil {
		tb.Skip("redis-cli not found in PATH; install it (apt-get install -y redis-tools) to run the cluster tests")
	}
	c := &Cluster{}
	args := []string{"--cluster", "create"}
	for i := 0; i < 3; i++ {
		s := &Server{tb: tb, bin: Binary(), dir: tb.TempDir(), extra: []string{
			"--cluster-enabled", "yes",
			"--cluster-config-file", "nodes.conf",
			"--cluster-node-timeout", "2000",
		}}
		s.launch()
		c.Nodes = append(c.Nodes, s)
		args = append(args, s.Addr())
	}
	args = append(args, "--cluster-replicas", "0", "--cluster-yes")
	out, err := exec.Command(cli, args...).CombinedOutput()
	if err != nil {
		tb.Fatalf("cannot create the Redis cluster: %v\n%s", err, out)
	}
	deadline := time.Now().Add(20 * time.Second)
	for _, s := range c.Nodes {
		for {
			info, err := exec.Command(cli, "-p", strconv.Itoa(s.port), "cluster", "info").Output()
			if err == nil && strings.Contains(string(info), "cluster_state:ok") {
				break
			}
			if time.Now().After(deadline) {
				tb.Fatalf("cluster node %s not ok after 20s: %v\n%s", s.Addr(), err, info)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	return c
}

// Addrs returns the nodes' host:port addresses (the seed list).
func (c *Cluster) Addrs() []string {
	out := make([]string, len(c.Nodes))
	for i, s := range c.Nodes {
		out[i] = s.Addr()
	}
	return out
}

// Kill stops every node at once.
func (c *Cluster) Kill() {
	for _, s := range c.Nodes {
		s.Kill()
	}
}

// Restart starts every node again; they keep their nodes.conf (slots and
// peers) but lose their data. It waits for cluster_state:ok.
func (c *Cluster) Restart() error {
	for _, s := range c.Nodes {
		s.Restart()
	}
	cli, _ := exec.LookPath("redis-cli")
	deadline := time.Now().Add(20 * time.Second)
	for _, s := range c.Nodes {
		for {
			info, err := exec.Command(cli, "-p", strconv.Itoa(s.port), "cluster", "info").Output()
			if err == nil && strings.Contains(string(info), "cluster_state:ok") {
				break
			}
			if time.Now().After(deadline) {
				return errors.New("cluster node " + s.Addr() + " not ok 20s after restart")
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	return nil
}
