package rawjson_test

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"strconv"
	"testing"

	"gw/sse/rawjson"
)

func TestParseFloat(t *testing.T) {
	f := func(raw string, want float64, ok bool) {
		t.Helper()
		got, gotOK := rawjson.ParseFloat([]byte(raw))
		if gotOK != ok || (ok && got != want) {
			t.Fatalf("ParseFloat(%q) = %v, %v; want %v, %v", raw, got, gotOK, want, ok)
		}
	}
	f(`0`, 0, true)
	f(`-0`, math.Copysign(0, -1), true)
	f(`1024`, 1024, true)
	f(`-12.5`, -12.5, true)
	f(`1e3`, 1000, true)
	f(`1E+3`, 1000, true)
	f(`2.5e-3`, 0.0025, true)
	f(`0.1`, 0.1, true)
	f(`123456789012345678901234567890123456789`, 123456789012345678901234567890123456789, true)
	f(`1e400`, 0, false)
	f(``, 0, false)
	f(` 1`, 0, false)
	f(`1 `, 0, false)
	f(`+1`, 0, false)
	f(`01`, 0, false)
	f(`.5`, 0, false)
	f(`1.`, 0, false)
	f(`0x1p3`, 0, false)
	f(`Inf`, 0, false)
	f(`NaN`, 0, false)
	f(`1_000`, 0, false)
	f(`"1"`, 0, false)
}

func TestParseInt(t *testing.T) {
	f := func(raw string, want int64, ok bool) {
		t.Helper()
		got, gotOK := rawjson.ParseInt([]byte(raw))
		if gotOK != ok || got != want {
			t.Fatalf("ParseInt(%q) = %v, %v; want %v, %v", raw, got, gotOK, want, ok)
		}
	}
	f(`0`, 0, true)
	f(`-0`, 0, true)
	f(`7`, 7, true)
	f(`4096`, 4096, true)
	f(`-42`, -42, true)
	f(`9223372036854775807`, math.MaxInt64, true)
	f(`-9223372036854775808`, math.MinInt64, true)
	f(`9223372036854775808`, 0, false)
	f(`-9223372036854775809`, 0, false)
	f(`18446744073709551615`, 0, false)
	f(`18446744073709551616`, 0, false)
	f(`99999999999999999999999`, 0, false)
	f(`1.0`, 0, false)
	f(`1e3`, 0, false)
	f(``, 0, false)
	f(`-`, 0, false)
	f(`01`, 0, false)
	f(`+1`, 0, false)
	f(` 1`, 0, false)
}

func TestAppendFloat(t *testing.T) {
	f := func(v float64, want string) {
		t.Helper()
		if got := rawjson.AppendFloat([]byte("x"), v); string(got) != "x"+want {
			t.Fatalf("AppendFloat(%v) = %s; want x%s", v, got, want)
		}
	}
	f(0, `0`)
	f(1024, `1024`)
	f(-1.5, `-1.5`)
	f(0.1, `0.1`)
	f(1e20, `100000000000000000000`)
	f(1e21, `1e+21`)
	f(1e-6, `0.000001`)
	f(1e-7, `1e-7`)
	f(-2.5e-10, `-2.5e-10`)
	f(math.NaN(), `null`)
	f(math.Inf(1), `null`)
	f(math.Inf(-1), `null`)

	// Agree with encoding/json on random values.
	r := rand.New(rand.NewPCG(3, 4))
	for range 10000 {
		v := math.Float64frombits(r.Uint64())
		if math.IsNaN(v) || math.IsInf(v, 0) {
			continue
		}
		want, _ := json.Marshal(v)
		got := rawjson.AppendFloat(nil, v)
		if string(got) != string(want) {
			t.Fatalf("AppendFloat(%v) = %s; want %s", v, got, want)
		}
		back, ok := rawjson.ParseFloat(got)
		if !ok || back != v {
			t.Fatalf("ParseFloat(AppendFloat(%v)) = %v, %v", v, back, ok)
		}
	}
	for range 1000 {
		n := r.Int64()
		if r.IntN(2) == 0 {
			n = -n
		}
		got, ok := rawjson.ParseInt(strconv.AppendInt(nil, n, 10))
		if !ok || got != n {
			t.Fatalf("ParseInt(%d) = %d, %v", n, got, ok)
		}
	}
}
