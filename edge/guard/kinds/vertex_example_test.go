package kinds

import "os"

// examples/gw.yaml's vertex key reads VERTEX_SA (see the Makefile).
func init() {
	b, err := os.ReadFile("../../../perf/mock/testdata/vertex_service_account.json")
	if err != nil {
		panic(err)
	}
	exampleEnv["VERTEX_SA"] = string(b)
}
