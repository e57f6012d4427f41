package resources

import (
	"encoding/json"
	"os"
	"testing"
	"time"
)

func TestDescribeSchemaRuns(t *testing.T) {
	start := time.Now()
	s := DescribeSchema()
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("schema: %d bytes in %v", len(b), time.Since(start))
	if p := os.Getenv("GW_SCHEMA_DUMP"); p != "" {
		os.WriteFile(p, b, 0o644)
	}
}
