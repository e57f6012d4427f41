package controlplane_test

import (
	"strings"
	"testing"
	"time"

	"github.com/VictoriaMetrics/metrics"

	"gw/edge/usage"
	"gw/edge/usage/controlplane"
	"gw/edge/usage/usagetest"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func start(t *testing.T, answer func(try int, id string) (int, string), clock usage.Clock, n int) (*usagetest.ControlPlane, *usage.Pipeline) {
	t.Helper()
	pki := usagetest.NewPKI(t)
	cp := usagetest.StartControlPlane(t, pki)
	cp.Answer = answer
	sink, err := controlplane.New(controlplane.Config{URL: cp.URL, ClientCert: pki.ClientCert, ClientKey: pki.ClientKey, CACert: pki.CAFile})
	if err != nil {
		t.Fatal(err)
	}
	p := usagetest.Pipeline(t, controlplane.SinkName, n, controlplane.Policy, clock, sink)
	for i := 0; i < n; i++ {
		r := usagetest.Record(i)
		if fc, ok := clock.(*usagetest.FakeClock); ok {
			r.OccurredAt = fc.Now()
		}
		p.Emit(r)
	}
	return cp, p
}

func sameIDs(t *testing.T, ids []string) {
	t.Helper()
	for _, id := range ids {
		if id == "" || id != ids[0] {
			t.Fatalf("batch IDs differ across resends: %v", ids)
		}
	}
}

// TestDelivered: accepted over mutual TLS; a 503 MTLS_UNAVAILABLE and
// other failures are resent with the same batch ID until accepted.
func TestDelivered(t *testing.T) {
	cp, p := start(t, func(try int, _ string) (int, string) {
		switch try {
		case 1:
			return 503, `{"code":"MTLS_UNAVAILABLE"}`
		case 2:
			return 500, "oops"
		}
		return 200, ""
	}, usagetest.NewFakeClock(t0), 5)
	usagetest.Eventually(t, 5*time.Second, "5 events accepted", func() bool { return len(cp.Events()) == 5 })
	ids := cp.BatchIDs()
	if len(ids) != 3 {
		t.Fatalf("%d requests; want 3", len(ids))
	}
	sameIDs(t, ids)
	usagetest.ValidateNDJSON(t, []byte(strings.Join(cp.Events(), "\n")))
	st := p.Status()[0]
	if st.Name != "control_plane" || st.FailedBatches != 2 || st.SentEvents != 5 || !strings.Contains(st.LastError, "status 500") {
		t.Fatalf("status %+v", st)
	}
}

// Test422: a batch that can never be stored is dropped at once and its
// events counted as rejected.
func Test422(t *testing.T) {
	rej := metrics.GetOrCreateCounter(`gw_usage_events_rejected_total`)
	before := rej.Get()
	cp, p := start(t, func(int, string) (int, string) { return 422, `{"code":"INVALID"}` }, usagetest.NewFakeClock(t0), 4)
	usagetest.Eventually(t, 5*time.Second, "drop", func() bool { return p.Status()[0].DroppedEvents == 4 })
	if got := rej.Get() - before; got != 4 {
		t.Fatalf("rejected %d; want 4", got)
	}
	if n := len(cp.BatchIDs()); n != 1 {
		t.Fatalf("a 422 batch was resent: %d requests", n)
	}
}

// TestEightFailures: 8 consecutive failures with a response drop the batch.
func TestEightFailures(t *testing.T) {
	cp, p := start(t, func(int, string) (int, string) { return 500, "down" }, usagetest.NewFakeClock(t0), 3)
	usagetest.Eventually(t, 5*time.Second, "drop", func() bool { return p.Status()[0].DroppedEvents == 3 })
	ids := cp.BatchIDs()
	if len(ids) != 8 {
		t.Fatalf("%d sends; want 8", len(ids))
	}
	sameIDs(t, ids)
}

// TestMaxAge: a batch is resent until its oldest event is 30 minutes old.
// Its events are 29m59s old at the first send, so the age rule ends the
// retries (the last wait is cut to the time left) before 8 failures do.
func TestMaxAge(t *testing.T) {
	clock := usagetest.NewFakeClock(t0)
	pki := usagetest.NewPKI(t)
	cp := usagetest.StartControlPlane(t, pki)
	cp.Answer = func(int, string) (int, string) { return 503, "MTLS_UNAVAILABLE" }
	sink, err := controlplane.New(controlplane.Config{URL: cp.URL, ClientCert: pki.ClientCert, ClientKey: pki.ClientKey, CACert: pki.CAFile})
	if err != nil {
		t.Fatal(err)
	}
	p := usagetest.Pipeline(t, controlplane.SinkName, 2, controlplane.Policy, clock, sink)
	for i := 0; i < 2; i++ {
		r := usagetest.Record(i)
		r.OccurredAt = t0.Add(-(29*time.Minute + 59*time.Second))
		p.Emit(r)
	}
	usagetest.Eventually(t, 5*time.Second, "drop", func() bool { return p.Status()[0].DroppedEvents == 2 })
	ids := cp.BatchIDs()
	if len(ids) >= controlplane.MaxResponseFailures {
		t.Fatalf("%d sends: the 8-failure rule, not the age rule, ended the batch", len(ids))
	}
	sameIDs(t, ids)
	if now := clock.Now(); now.Sub(t0.Add(-(29*time.Minute + 59*time.Second))) != controlplane.MaxAge {
		t.Fatalf("gave up at age %v; want %v", now.Sub(t0.Add(-(29*time.Minute + 59*time.Second))), controlplane.MaxAge)
	}
}

// TestClientCertRequired: the server refuses a client certificate from
// another CA; the sink reports the failure (no response) and keeps the
// batch for a retry.
func TestClientCertRequired(t *testing.T) {
	pki := usagetest.NewPKI(t)
	cp := usagetest.StartControlPlane(t, pki)
	sink, err := controlplane.New(controlplane.Config{URL: cp.URL, ClientCert: pki.OtherCert, ClientKey: pki.OtherKey, CACert: pki.CAFile})
	if err != nil {
		t.Fatal(err)
	}
	p := usagetest.Pipeline(t, controlplane.SinkName, 1, controlplane.Policy, nil, sink)
	p.Emit(usagetest.Record(1))
	usagetest.Eventually(t, 5*time.Second, "a failed send", func() bool { return p.Status()[0].FailedBatches >= 1 })
	if len(cp.BatchIDs()) != 0 {
		t.Fatal("the server accepted a certificate of another CA")
	}
	if st := p.Status()[0]; !strings.Contains(st.LastError, "cannot reach the control plane") {
		t.Fatalf("status %+v", st)
	}
}

func TestConfigErrors(t *testing.T) {
	for _, c := range []controlplane.Config{
		{URL: "http://cp.example", ClientCert: "a", ClientKey: "b"},
		{URL: "https://cp.example"},
		{URL: "https://cp.example", ClientCert: "/nonexistent", ClientKey: "/nonexistent"},
	} {
		if _, err := controlplane.New(c); err == nil {
			t.Fatalf("%+v accepted", c)
		}
	}
}
