package usage

// Stall blocks the dispatcher until the returned func is called, so tests
// can fill the main queue deterministically.
func (p *Pipeline) Stall() (release func()) {
	in, out := make(chan struct{}), make(chan struct{})
	p.ctl <- func(map[string]*worker) { close(in); <-out }
	<-in
	return func() { close(out) }
}

// NextWait exposes the retry rule.
var NextWait = nextWait

// AppendMS exposes the latency formatter.
var AppendMS = appendMS

// AppendTime exposes the occurred_at formatter.
var AppendTime = appendTime

// AppendInt exposes the integer formatter.
var AppendInt = appendInt

// AppendStr exposes the string field writer.
var AppendStr = appendStr
