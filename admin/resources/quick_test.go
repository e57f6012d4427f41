package resources

import "testing"

func TestQuickBase(t *testing.T) {
	r := mustLoad(t, baseFile)
	if len(r.Models) != 1 || r.Models[0].ProviderKey == nil {
		t.Fatalf("got %+v", r.Models)
	}
	loadErr(t, baseFile+"  - display_name: g2\n    routing: {targets: [{model: gpt-x}]}\n", `models[1] (display_name=g2): routing.targets[0].model: unknown model "gpt-x"; available: gpt`)
}
