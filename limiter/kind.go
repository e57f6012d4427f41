package limiter

import "time"

// Kind names one limit: a fixed request or token window, or the
// concurrency semaphore.
type Kind uint8

// The limit kinds. Windows are fixed and aligned to the Unix epoch: a
// window of length L seconds starts at every multiple of L. TPS and TPH have
// no `rate_limit` field; they serve rate_limit_policies with max_tokens and
// window second or hour.
const (
	RPS Kind = iota // requests per 1 s
	RPM             // requests per 60 s
	RPH             // requests per 3,600 s
	RPD             // requests per 86,400 s
	TPS             // tokens per 1 s
	TPM             // tokens per 60 s
	TPH             // tokens per 3,600 s
	TPD             // tokens per 86,400 s
	// RPW counts requests in a fixed window of any whole number of seconds,
	// given per entry (Reservation.AddWindow): limit-count's time_window.
	RPW

	// Concurrency is the in-flight semaphore (Acquire), not a window.
	Concurrency

	numWindows = int(Concurrency)
)

var kindNames = [...]string{"rps", "rpm", "rph", "rpd", "tps", "tpm", "tph", "tpd", "rpw", "concurrency"}

// kindSeconds is the window length of each windowed kind; RPW's is per
// entry.
var kindSeconds = [numWindows]int64{1, 60, 3600, 86400, 1, 60, 3600, 86400, 0}

// MaxWindow is the longest RPW window (about 136 years): window arithmetic
// is in unix nanoseconds.
const MaxWindow = (1 << 32) * time.Second

// String returns the short name used in counter keys: "rpm", "tpd", ...
func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "unknown"
}

// Window returns the window length; 0 for Concurrency and RPW (whose
// length is per entry).
func (k Kind) Window() time.Duration {
	if int(k) < numWindows {
		return time.Duration(kindSeconds[k]) * time.Second
	}
	return 0
}

// Tokens reports whether k counts tokens.
func (k Kind) Tokens() bool { return k >= TPS && k <= TPD }

// Requests reports whether k counts requests.
func (k Kind) Requests() bool { return k <= RPD || k == RPW }

// WindowKind returns the kind of a fixed window of length w (1 s, 60 s,
// 3,600 s or 86,400 s) counting tokens or requests. It maps a
// rate_limit_policies entry (`window` + max_requests / max_tokens).
func WindowKind(w time.Duration, tokens bool) (Kind, bool) {
	var k Kind
	switch w {
	case time.Second:
		k = RPS
	case time.Minute:
		k = RPM
	case time.Hour:
		k = RPH
	case 24 * time.Hour:
		k = RPD
	default:
		return 0, false
	}
	if tokens {
		k += TPS - RPS
	}
	return k, true
}

// Limits mirrors a `rate_limit` block (and an `mcp_rate_limits` value,
// whose token fields stay zero). Zero means unlimited. The fields match
// admin/resources.RateLimit in name, type and order, so the integrator
// converts with a plain limiter.Limits(rl) without importing admin here.
type Limits struct {
	RPS, RPM, RPH, RPD int64
	TPM, TPD           int64
	Concurrency        int64
}

// Subject names whose counters a limit charges. Counters are keyed by
// subject, never by snapshot, so they survive config reloads.
//
// ID is a derived ID (caller key, model) or a verbatim value (team_id,
// user_id). Scope, when set, keeps counters of one ID apart for different
// owners: a rate_limit_policies derived ID, an MCP server name. Neither may
// contain ':' when Scope is used (derived IDs never do), since the shared
// store writes the pair as "<scope>:<id>".
type Subject struct {
	Scope, ID string
}

// AppendKey appends the subject's key: "<id>", or "<scope>:<id>".
func (s Subject) AppendKey(dst []byte) []byte {
	if s.Scope != "" {
		dst = append(dst, s.Scope...)
		dst = append(dst, ':')
	}
	return append(dst, s.ID...)
}
