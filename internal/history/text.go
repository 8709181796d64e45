package history

import (
	"bytes"
	"strconv"
)

// The text parser is written by hand over byte slices: it is the first pass
// over every history and must run at hundreds of megabytes per second
// without allocating per line (strings.Fields and strconv on strings would
// allocate for every token).

// splitFields splits a comment-free, trimmed line on runs of spaces and
// tabs into r.fields, rejecting control and non-ASCII characters.
func (r *Reader) splitFields(line []byte) error {
	r.fields = r.fields[:0]
	start := -1
	for i, c := range line {
		if c == ' ' || c == '\t' {
			if start >= 0 {
				r.fields = append(r.fields, line[start:i])
				start = -1
			}
			continue
		}
		if c < 0x21 || c > 0x7e {
			if c == 0 {
				return r.fail(ErrSyntax, nil, "NUL byte: this is not a text history")
			}
			return r.fail(ErrSyntax, line[i:i+1], "unexpected character %q", rune(c))
		}
		if start < 0 {
			start = i
		}
	}
	if start >= 0 {
		r.fields = append(r.fields, line[start:])
	}
	return nil
}

// scanU64 scans an unsigned 64-bit decimal or 0x-prefixed hex number
// starting at b[i], returning the value and the index after it. err is
// errNumber if there is no number there and strconv.ErrRange if it does
// not fit in 64 bits. The text parser and the fast paths share it, so a
// number means the same everywhere.
func scanU64(b []byte, i int) (v uint64, j int, err error) {
	// Hand-written: the fast paths spend most of their time here. Up to 15
	// hex or 19 decimal digits cannot overflow, so only longer numbers pay
	// for the range check.
	if i+2 < len(b) && b[i] == '0' && (b[i+1] == 'x' || b[i+1] == 'X') {
		j = i + 2
		for ; j < len(b); j++ {
			d := hexDigit[b[j]]
			if d > 15 {
				break
			}
			if j-i >= 2+15 && v>>60 != 0 {
				return 0, i, strconv.ErrRange
			}
			v = v<<4 | uint64(d)
		}
		if j == i+2 {
			return 0, i, errNumber
		}
		return v, j, nil
	}
	j = i
	for ; j < len(b) && j-i < 19; j++ {
		d := b[j] - '0'
		if d > 9 {
			break
		}
		v = v*10 + uint64(d)
	}
	if j == i {
		return 0, i, errNumber
	}
	for ; j < len(b) && '0' <= b[j] && b[j] <= '9'; j++ {
		d := uint64(b[j] - '0')
		if v > (1<<64-1-d)/10 {
			return 0, i, strconv.ErrRange
		}
		v = v*10 + d
	}
	return v, j, nil
}

// hexDigit is the value of each hex digit byte, 0xff for other bytes.
var hexDigit = func() (t [256]uint8) {
	for c := range t {
		switch {
		case '0' <= c && c <= '9':
			t[c] = uint8(c - '0')
		case 'a' <= c && c <= 'f':
			t[c] = uint8(c - 'a' + 10)
		case 'A' <= c && c <= 'F':
			t[c] = uint8(c - 'A' + 10)
		default:
			t[c] = 0xff
		}
	}
	return t
}()

// parseU64 parses a whole token as a number (see scanU64).
func parseU64(b []byte) (uint64, error) {
	v, j, err := scanU64(b, 0)
	if err == nil && j != len(b) {
		err = errNumber
	}
	return v, err
}

// number parses a token as an address or value, naming what it is on error.
func (r *Reader) number(tok []byte, what string) (uint64, error) {
	v, err := parseU64(tok)
	if err != nil && len(tok) > 0 && tok[0] == '-' {
		return 0, r.negative(tok, what)
	}
	if err == strconv.ErrRange {
		return 0, r.fail(ErrSyntax, tok, "%s %q does not fit in 64 bits", what, clip(tok))
	}
	if err != nil {
		return 0, r.fail(ErrSyntax, tok, "%s %q is not a number (decimal or 0x hex)", what, clip(tok))
	}
	return v, nil
}

// procID parses a process id: decimal, 0 to MaxProc.
func (r *Reader) procID(tok []byte) (int32, error) {
	var v int64
	if len(tok) > 0 && tok[0] == '-' {
		return 0, r.fail(ErrSyntax, tok, "process id %q is negative: a process id is a decimal integer from 0 to %d", clip(tok), MaxProc)
	}
	if len(tok) == 0 || len(tok) > 10 {
		return 0, r.fail(ErrSyntax, tok, "process id %q is not a decimal integer from 0 to %d", clip(tok), MaxProc)
	}
	for _, c := range tok {
		if c < '0' || c > '9' {
			return 0, r.fail(ErrSyntax, tok, "process id %q is not a decimal integer from 0 to %d", clip(tok), MaxProc)
		}
		v = v*10 + int64(c-'0')
	}
	if v > MaxProc {
		return 0, r.fail(ErrSyntax, tok, "process id %s is larger than %d", tok, MaxProc)
	}
	return int32(v), nil
}

// clip shortens a token quoted in an error message.
func clip(b []byte) string {
	if len(b) > 40 {
		return string(b[:40]) + "..."
	}
	return string(b)
}

var (
	tokInv   = []byte("inv")
	tokRet   = []byte("ret")
	tokRead  = []byte("read")
	tokCAS   = []byte("cas")
	tokSwap  = []byte("swap")
	tokOK    = []byte("ok")
	tokFail  = []byte("fail")
	tokCrash = []byte("crash")
	tokInit  = []byte("init")
	tokMagic = []byte("pmlin-history")
)

func (r *Reader) parseText(line []byte) (*Event, error) {
	if c := line[0]; '0' <= c && c <= '9' && !r.noFast {
		if ev, ok, err := r.fastText(line); ok {
			return ev, err
		}
	}
	if err := r.splitFields(line); err != nil {
		return nil, err
	}
	if r.closed != 0 {
		return nil, r.afterClosing()
	}
	f := r.fields
	switch {
	case bytes.Equal(f[0], tokRecording), bytes.Equal(f[0], tokEnd), bytes.Equal(f[0], tokInterrupted):
		return nil, r.parseRecordingText(f)
	case bytes.Equal(f[0], tokMagic):
		if len(f) != 2 {
			return nil, r.fail(ErrSyntax, nil, "the header line is %q", "pmlin-history v1")
		}
		return nil, r.header(string(f[1]))
	case bytes.Equal(f[0], tokInit):
		return nil, r.parseInit(f[1:])
	case bytes.Equal(f[0], tokCrash):
		if len(f) != 1 {
			return nil, r.fail(ErrSyntax, nil, "a crash line has nothing after %q", "crash")
		}
		return r.crashEvent(), nil
	}
	if f[0][0] < '0' || f[0][0] > '9' {
		return nil, r.unknownDirective(f[0])
	}
	proc, err := r.procID(f[0])
	if err != nil {
		if lerr := r.logLine(f); lerr != nil {
			return nil, lerr
		}
		return nil, err
	}
	if len(f) < 2 {
		return nil, r.fail(ErrSyntax, nil, "process %d: expected inv or ret", proc)
	}
	switch {
	case bytes.Equal(f[1], tokInv):
		return r.parseInv(proc, f[2:])
	case bytes.Equal(f[1], tokRet):
		return r.parseRet(proc, f[2:])
	}
	if err := r.logLine(f); err != nil {
		return nil, err
	}
	return nil, r.fail(ErrSyntax, f[1], "process %d: expected inv or ret, found %q", proc, clip(f[1]))
}

func (r *Reader) parseInit(args [][]byte) error {
	if len(args) == 0 {
		return r.fail(ErrSyntax, nil, "init needs a value or address=value pairs")
	}
	if len(args) == 1 && bytes.IndexByte(args[0], '=') < 0 {
		v, err := r.number(args[0], "initial value")
		if err != nil {
			return err
		}
		return r.setInitDefault(v)
	}
	for _, a := range args {
		i := bytes.IndexByte(a, '=')
		if i < 0 {
			return r.fail(ErrSyntax, a, "init pair %q is not address=value", clip(a))
		}
		addr, err := r.number(a[:i], "address")
		if err != nil {
			return err
		}
		v, err := r.number(a[i+1:], "initial value")
		if err != nil {
			return err
		}
		if err := r.setInitWord(addr, v); err != nil {
			return err
		}
	}
	return nil
}

func (r *Reader) parseInv(proc int32, args [][]byte) (*Event, error) {
	if len(args) == 0 {
		return nil, r.fail(ErrSyntax, nil, "process %d: inv needs read, cas or swap", proc)
	}
	ev := r.clearEvent()
	words := args[1:]
	switch {
	case bytes.Equal(args[0], tokRead):
		ev.Op = Read
		for _, w := range words {
			if err := r.addWord(r.number, w); err != nil {
				return nil, err
			}
		}
	case bytes.Equal(args[0], tokCAS):
		ev.Op = CAS
		for _, w := range words {
			i := bytes.IndexByte(w, ':')
			j := -1
			if i >= 0 {
				j = bytes.IndexByte(w[i+1:], ':')
			}
			if i < 0 || j < 0 || bytes.IndexByte(w[i+1+j+1:], ':') >= 0 {
				return nil, r.fail(ErrSyntax, w, "cas word %q is not address:expected:new", clip(w))
			}
			j += i + 1
			if err := r.addWord(r.number, w[:i], w[i+1:j], w[j+1:]); err != nil {
				return nil, err
			}
		}
	case bytes.Equal(args[0], tokSwap):
		ev.Op = Swap
		for _, w := range words {
			i := bytes.IndexByte(w, ':')
			if i < 0 || bytes.IndexByte(w[i+1:], ':') >= 0 {
				return nil, r.fail(ErrSyntax, w, "swap word %q is not address:new", clip(w))
			}
			if err := r.addWord(r.number, w[:i], w[i+1:]); err != nil {
				return nil, err
			}
		}
	default:
		return nil, r.fail(ErrSyntax, args[0], "process %d: unknown operation %q (expected read, cas or swap)", proc, clip(args[0]))
	}
	return r.invoke(proc)
}

// parseRet decodes a response by the kind of the pending operation;
// respond checks it against the operation.
func (r *Reader) parseRet(proc int32, args [][]byte) (*Event, error) {
	idx, ps, err := r.pendingFor(proc)
	if err != nil {
		return nil, err
	}
	ev := &r.cur.Event
	ev.Values, ev.OK, ev.FailAddr = ev.Values[:0], false, 0
	values := func(toks [][]byte, what string) error { return parseValues(r, toks, r.number, what) }
	if ps.op != CAS {
		if err := values(args, "returned value"); err != nil {
			return nil, err
		}
		return r.respond(idx, ps, response{kind: retValues})
	}
	switch {
	case len(args) == 1 && bytes.Equal(args[0], tokOK):
		return r.respond(idx, ps, response{kind: retOK})
	case len(args) >= 2 && bytes.Equal(args[0], tokFail):
		a, err := r.number(args[1], "failed address")
		if err != nil {
			return nil, err
		}
		if err := values(args[2:], "reported value"); err != nil {
			return nil, err
		}
		return r.respond(idx, ps, response{kind: retFail, failAddr: a})
	}
	return nil, r.fail(ErrIllFormed, nil, "process %d: the cas of line %d must return %q, %q or %q", proc, ps.invLine, "ok", "fail <address>", "fail <address> <v1> ... <vk>")
}

// parseValues parses the tokens of a response's values (text tokens or
// JSON numbers) into r.cur.Event.Values.
func parseValues[T ~[]byte](r *Reader, toks []T, num func(tok []byte, what string) (uint64, error), what string) error {
	for _, t := range toks {
		v, err := num(t, what)
		if err != nil {
			return err
		}
		r.cur.Event.Values = append(r.cur.Event.Values, v)
	}
	return nil
}

func contains(addrs []uint64, a uint64) bool { return containsWord(addrs, 1, a) }

// containsWord is contains of the addresses words[0], words[stride], ...
// (see duplicateWord).
func containsWord(words []uint64, stride int, a uint64) bool {
	for i := 0; i < len(words); i += stride {
		if words[i] == a {
			return true
		}
	}
	return false
}
