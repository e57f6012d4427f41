package usagetest

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"gw/admin/resources"
	"gw/edge/usage"
)

// Variants returns, for every field of usage.Record (and of its telemetry
// tags), a copy of base with that field changed and the rest as they are,
// named by the field. Encoders that copy what is unchanged from the
// record before test with it that every field is compared: a field added
// to Record is covered without a change here, and a field of a kind this
// does not know how to change fails the test.
func Variants(tb testing.TB, base *usage.Record) (names []string, out []usage.Record) {
	tb.Helper()
	rt := reflect.TypeOf(*base)
	for i := range rt.NumField() {
		f := rt.Field(i)
		if f.Name == "Tags" {
			tags := resources.TelemetryTags{Kind: "k", BrandedProvider: "b", PKLabel: "p", BYOLabel: "y"}
			if base.Tags != nil {
				tags = *base.Tags
			}
			tt := reflect.TypeOf(tags)
			for j := range tt.NumField() {
				v := *base
				t := tags
				change(tb, "Tags."+tt.Field(j).Name, reflect.ValueOf(&t).Elem().Field(j))
				v.Tags = &t
				names, out = append(names, "Tags."+tt.Field(j).Name), append(out, v)
			}
			v := *base
			if v.Tags == nil {
				v.Tags = &tags
			} else {
				v.Tags = nil
			}
			names, out = append(names, "Tags"), append(out, v)
			continue
		}
		v := *base
		change(tb, f.Name, reflect.ValueOf(&v).Elem().Field(i))
		names, out = append(names, f.Name), append(out, v)
	}
	return names, out
}

// change sets fv to a value other than the one it has.
func change(tb testing.TB, name string, fv reflect.Value) {
	tb.Helper()
	switch x := fv.Addr().Interface().(type) {
	case *time.Time:
		*x = x.Add(1234 * time.Millisecond)
	case *time.Duration:
		*x += 1234 * time.Microsecond
	case *usage.RequestID:
		*x = usage.NewRequestID()
	case *string:
		*x += "-changed"
	case *int:
		*x += 7
	case *int64:
		*x += 7
	case *float64:
		*x += 0.25
	case *bool:
		*x = !*x
	case *[]string:
		*x = append((*x)[:len(*x):len(*x)], "added")
	case *[]usage.GuardrailHit:
		*x = append((*x)[:len(*x):len(*x)], usage.GuardrailHit{Guardrail: "g", Action: "block"})
	default:
		tb.Fatalf("usagetest.Variants: cannot change field %s of type %s", name, fv.Type())
	}
}

// FuzzBatch is the batch of the encoders' fuzz targets: 1-9 records from
// the fuzzed values. Records go in pairs that differ only in their IDs and
// times (what an encoder copying unchanged parts copies); every other pair
// changes the optional fields, lengths and guardrails, and every third
// record is a failed attempt.
func FuzzBatch(model, op, user, msg string, tokens int64, status int, n uint8) []usage.Record {
	var batch []usage.Record
	for i := 0; i < int(n%9)+1; i++ {
		k := i / 2
		r := usage.Record{OccurredAt: time.Unix(1700000000+int64(i), 5), RequestID: usage.NewRequestID(), Attempt: 1, AttemptKind: usage.AttemptFinal,
			StatusCode: status, Model: model, Operation: op, InboundProtocol: "chat_completions", CacheStatus: usage.CacheNone,
			PromptTokens: tokens + int64(k), TotalTokens: tokens, Latency: time.Duration(tokens) * time.Duration(k)}
		if k%2 == 1 {
			r.UserName, r.ErrorMessage, r.ErrorClass = user, msg, op
			r.Model += strings.Repeat("x", k)
			r.AppliedGuardrails = []string{user, model}
			r.GuardrailMonitorHits = []usage.GuardrailHit{{Guardrail: model, Action: msg}}
			r.Tags = &resources.TelemetryTags{Kind: user, PKLabel: msg}
			r.MCPServer, r.MCPTool = user, msg
		}
		if i%3 == 2 {
			r.AttemptKind = usage.AttemptFailed
		}
		batch = append(batch, r)
	}
	return batch
}
