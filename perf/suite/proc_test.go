package suite

import (
	"errors"
	"net"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// A child that exits before it is ready (its port taken between FreeAddr
// and its bind) is started again on new addresses; one that stays up but
// never gets ready is not.
func TestLaunchRetriesAChildThatExits(t *testing.T) {
	// The child exits at once on the first exitFirst attempts (what a gw
	// whose port was taken does) and then stays up; ready says it is ready
	// once it has run a moment.
	cases := []struct {
		name      string
		exitFirst int // attempts whose child exits at once
		hang      bool
		wantErr   string
		wantTries int
	}{
		{name: "first attempt", exitFirst: 0, wantTries: 1},
		{name: "port race twice", exitFirst: 2, wantTries: 3},
		{name: "always exits", exitFirst: launchAttempts, wantErr: "exited before it was ready 3 times", wantTries: launchAttempts},
		{name: "up but never ready", hang: true, wantErr: "never ready", wantTries: 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tries := 0
			var seen []string
			p, addrs, err := Launch("child", 2, func(a []string) *exec.Cmd {
				tries++
				seen = append(seen, a...)
				if tries <= tc.exitFirst {
					return exec.Command("sh", "-c", "exit 1")
				}
				return exec.Command("sleep", "30")
			}, func(p *Proc, a []string) error {
				if tc.hang {
					return errors.New("never ready")
				}
				// Ready once the child has run a moment without exiting.
				select {
				case <-p.done:
					return errExited
				case <-time.After(300 * time.Millisecond):
					return nil
				}
			})
			if tries != tc.wantTries {
				t.Fatalf("%d attempts; want %d", tries, tc.wantTries)
			}
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v; want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer p.Stop()
			if len(addrs) != 2 || p.Addr != addrs[0] || addrs[0] == addrs[1] {
				t.Fatalf("addrs %v, Addr %s; want two distinct addresses, the first the Proc's", addrs, p.Addr)
			}
			for _, a := range seen {
				if _, _, err := net.SplitHostPort(a); err != nil || !strings.HasPrefix(a, "127.0.0.1:") {
					t.Fatalf("address %q is not a loopback host:port", a)
				}
			}
		})
	}
}

func TestWaitHTTPSeesTheExit(t *testing.T) {
	p, err := Start(exec.Command("sh", "-c", "exit 3"), "127.0.0.1:1")
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := p.WaitHTTP("http://127.0.0.1:1/readyz", 30*time.Second); !errors.Is(err, errExited) {
		t.Fatalf("err %v; want errExited", err)
	}
	if time.Since(start) > 10*time.Second {
		t.Fatal("WaitHTTP waited out its deadline for a process that had exited")
	}
	p.Stop() // already exited: returns
}
