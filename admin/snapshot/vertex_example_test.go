package snapshot

import "os"

// examples/gw.yaml has a vertex key whose credential `make run` exports as
// VERTEX_SA: the test service account (a key generated for tests only).
func init() {
	b, err := os.ReadFile("../../perf/mock/testdata/vertex_service_account.json")
	if err != nil {
		panic(err)
	}
	exampleEnv["VERTEX_SA"] = string(b)
}
