package history

import (
	"encoding/binary"
	"math/bits"
)

// The fast paths parse the common event lines in one pass over the bytes,
// without splitting fields first, in two steps: decoding (decodeText,
// decodeJSON) depends on the line's bytes alone, so that the Reader's
// workers can decode chunks of lines in parallel (chunks.go), and applying
// (applyFast) checks the decoded event against the Reader's state, in file
// order. A line that does not decode, or whose decoded response does not
// match its process's pending operation, goes to the general path, which
// also produces every error message: both paths take the same lines the
// same way, whoever decodes them.

// fastKind is what a fast path decoded.
type fastKind uint8

const (
	fastNone  fastKind = iota // not a plain event line: the general path
	fastInv                   // an invocation
	fastRet                   // a response
	fastCrash                 // a crash (JSON Lines; a text crash line is short)
)

// fastRec is a decoded line. Its numbers are in a slice beside it, from
// offset nums: a read's k addresses, a cas's k (address, expected, new)
// or a swap's k (address, new) in turn; a response's k values, the failed
// address being in fail.
type fastRec struct {
	kind fastKind
	syn  Format // Text or JSONL
	op   OpKind
	resp responseKind
	proc int32
	k    int32
	nums int32
	fail uint64
}

// fastText parses a plain text event line (see decodeText) and applies it;
// ok is false when the general path must parse the line.
func (r *Reader) fastText(line []byte) (ev *Event, ok bool, err error) {
	var rec fastRec
	var good bool
	if r.nums, good = decodeText(line, &rec, r.nums[:0]); !good {
		return nil, false, nil
	}
	return r.applyFast(&rec, r.nums)
}

// decodeText decodes the common event lines ("<p> inv read ...", "<p> inv
// cas a:e:n ...", "<p> inv swap a:n ...", "<p> ret ...") in the plain form
// the recorders write: single spaces or tabs between tokens, decimal or
// 0x-hex numbers that fit in 64 bits. It appends the numbers to nums and
// reports false for anything else, including every malformed line. It
// exists because field splitting and re-scanning cost a third of the
// analyzer's time on large histories.
func decodeText(line []byte, rec *fastRec, nums []uint64) ([]uint64, bool) {
	c := cursor{b: line}
	*rec = fastRec{syn: Text, nums: int32(len(nums))}
	// A process id is decimal, at most 10 digits (as procID requires).
	if len(line) > 1 && line[0] == '0' && (line[1] == 'x' || line[1] == 'X') {
		return nums, false
	}
	p, good := c.number()
	if !good || c.i > 10 || p > MaxProc || !c.space() {
		return nums, false
	}
	rec.proc = int32(p)
	// Each word is tried only where its first byte says it may be (a
	// word that does not match cost a compare each).
	switch c.peek() {
	case 'i':
		if !c.word("inv") || !c.space() {
			return nums, false
		}
		rec.kind = fastInv
		switch c.peek() {
		case 'r':
			if !c.word("read") {
				return nums, false
			}
			rec.op = Read
			for c.space() {
				a, good := c.number()
				if !good {
					return nums, false
				}
				nums = append(nums, a)
			}
		case 'c':
			if !c.word("cas") {
				return nums, false
			}
			rec.op = CAS
			return c.tuples(rec, nums, 3)
		case 's':
			if !c.word("swap") {
				return nums, false
			}
			rec.op = Swap
			return c.tuples(rec, nums, 2)
		default:
			return nums, false
		}
		rec.k = int32(len(nums)) - rec.nums
		return nums, c.end()
	case 'r':
		if !c.word("ret") || !c.space() {
			return nums, false
		}
		rec.kind = fastRet
		switch {
		case c.peek() == 'o':
			if !c.word("ok") {
				return nums, false
			}
			rec.resp = retOK
			return nums, c.end()
		case c.peek() == 'f':
			if !c.word("fail") || !c.space() {
				return nums, false
			}
			a, good := c.number()
			if !good || (c.space() && !c.values(&nums)) {
				return nums, false
			}
			rec.resp, rec.fail = retFail, a
		default:
			// The values, read here rather than by c.values: this is
			// half of all the lines.
			for {
				v, good := c.number()
				if !good {
					return nums, false
				}
				nums = append(nums, v)
				if !c.space() {
					break
				}
			}
			rec.resp = retValues
		}
		rec.k = int32(len(nums)) - rec.nums
		return nums, c.end()
	}
	return nums, false
}

// tuples decodes the words of a cas (a:e:n, arity 3) or a swap (a:n,
// arity 2) to the end of the line, as they come (a, e, n, a, e, n, ...).
func (c *cursor) tuples(rec *fastRec, nums []uint64, arity int) ([]uint64, bool) {
	for c.space() {
		a, good := c.number()
		if !good || !c.colon() {
			return nums, false
		}
		e, good := c.number()
		if !good {
			return nums, false
		}
		if arity == 2 {
			// (An append of a variable length calls memmove: one per
			// word was a tenth of this function.)
			nums = append(nums, a, e)
			continue
		}
		if !c.colon() {
			return nums, false
		}
		n, good := c.number()
		if !good {
			return nums, false
		}
		nums = append(nums, a, e, n)
	}
	rec.k = (int32(len(nums)) - rec.nums) / int32(arity)
	return nums, c.end()
}

// applyFast applies a decoded line to the Reader's state: an invocation
// is recorded; a response must match its process's pending operation (a
// read's or a swap's values; a cas's ok or failure), else ok is false and
// the general path parses the line (and says what is wrong with it).
func (r *Reader) applyFast(rec *fastRec, nums []uint64) (ev *Event, ok bool, err error) {
	k := int(rec.k)
	ns := nums[rec.nums:]
	switch rec.kind {
	case fastCrash:
		return r.crashEvent(), true, nil
	case fastInv:
		ev := r.clearEvent()
		ev.Op = rec.op
		switch rec.op {
		case Read:
			// One append per word: k is small, and an append of a
			// slice calls memmove.
			for _, a := range ns[:k] {
				ev.Addrs = append(ev.Addrs, a)
			}
		case CAS:
			for w := 0; w < k; w++ {
				ev.Addrs = append(ev.Addrs, ns[3*w])
				ev.Expected = append(ev.Expected, ns[3*w+1])
				ev.New = append(ev.New, ns[3*w+2])
			}
		case Swap:
			for w := 0; w < k; w++ {
				ev.Addrs = append(ev.Addrs, ns[2*w])
				ev.New = append(ev.New, ns[2*w+1])
			}
		}
		ev, err := r.invoke(rec.proc)
		return ev, true, err
	case fastRet:
		idx, known := r.lookupProc(rec.proc)
		if !known || !r.procs[idx].pending {
			return nil, false, nil
		}
		ps := &r.procs[idx]
		if (ps.op == CAS) != (rec.resp != retValues) {
			return nil, false, nil
		}
		ev := &r.ev
		ev.Values, ev.OK, ev.FailAddr = ev.Values[:0], false, 0
		for _, v := range ns[:k] {
			ev.Values = append(ev.Values, v)
		}
		ev, err := r.respond(idx, ps, response{kind: rec.resp, failAddr: rec.fail})
		return ev, true, err
	}
	return nil, false, nil
}

// cursor scans a comment-free, trimmed line.
type cursor struct {
	b []byte
	i int
}

// space consumes one run of spaces and tabs; false if there is none or the
// line ends after it.
func (c *cursor) space() bool {
	j := c.i
	if j+1 < len(c.b) && c.b[j] == ' ' && c.b[j+1] > ' ' {
		c.i = j + 1 // the usual single space
		return true
	}
	for j < len(c.b) && (c.b[j] == ' ' || c.b[j] == '\t') {
		j++
	}
	if j == c.i || j == len(c.b) {
		return false
	}
	c.i = j
	return true
}

func (c *cursor) end() bool { return c.i == len(c.b) }

// peek is the byte at the cursor, 0 at the end of the line.
func (c *cursor) peek() byte {
	if c.i < len(c.b) {
		return c.b[c.i]
	}
	return 0
}

// values consumes one or more numbers separated by runs of blanks,
// appending them to *out.
func (c *cursor) values(out *[]uint64) bool {
	for {
		v, good := c.number()
		if !good {
			return false
		}
		*out = append(*out, v)
		if !c.space() {
			return true
		}
	}
}

func (c *cursor) colon() bool {
	if c.i < len(c.b) && c.b[c.i] == ':' {
		c.i++
		return true
	}
	return false
}

// word consumes w if it is a whole token.
func (c *cursor) word(w string) bool {
	if len(c.b)-c.i < len(w) || string(c.b[c.i:c.i+len(w)]) != w {
		return false
	}
	if j := c.i + len(w); j < len(c.b) && c.b[j] != ' ' && c.b[j] != '\t' {
		return false
	}
	c.i += len(w)
	return true
}

// number consumes a decimal or 0x-hex number that fits in 64 bits. The
// numbers of the common lines (up to 19 decimal or 16 hex digits) are
// scanned here, in loops without a range check or an error value: this is
// the innermost loop of reading (a third of the decoding time went to the
// call to scanU64 and its checks). Anything longer, which may overflow, is
// left to scanU64, so a number means the same everywhere.
func (c *cursor) number() (uint64, bool) {
	b, i := c.b, c.i
	var v uint64
	j := i
	if i+2 < len(b) && b[i] == '0' && (b[i+1] == 'x' || b[i+1] == 'X') {
		j = i + 2
		if len(b)-j >= 8 {
			// The first eight digits at once (SWAR, see lanes1): the new
			// values recorders write are long hex numbers (0x300000001),
			// and this loop was the most executed code of decoding. The
			// lanes up to the first that is not a digit count; each
			// one's value is its low nibble, plus 9 for a letter (bit 6);
			// moved to the high lanes (the first digit the most
			// significant of eight), they merge pairwise: nibbles into
			// bytes, bytes into 16 bits, into 32. The loop takes the rest.
			x := binary.LittleEndian.Uint64(b[j:])
			digit := (x + lanes1*(0x80-'0')) &^ (x + lanes1*(0x7f-'9'))
			lower := x | lanes1*0x20
			letter := (lower + lanes1*(0x80-'a')) &^ (lower + lanes1*(0x7f-'f'))
			if n := bits.TrailingZeros64((^(digit|letter)|x)&lanesHi) / 8; n > 0 {
				d := x&(lanes1*0x0f) + (x>>6)&lanes1*9
				d = d << (64 - 8*n)
				d = (d<<4 | d>>8) & 0x00ff00ff00ff00ff
				d = (d<<8 | d>>16) & 0x0000ffff0000ffff
				v = (d<<16 | d>>32) & 0xffffffff
				j += n
			}
		}
		for ; j < len(b); j++ {
			d := hexDigit[b[j]]
			if d > 15 {
				break
			}
			v = v<<4 | uint64(d)
		}
		if n := j - i - 2; n > 0 && n <= 16 {
			c.i = j
			return v, true
		}
	} else {
		for ; j < len(b); j++ {
			d := b[j] - '0'
			if d > 9 {
				break
			}
			v = v*10 + uint64(d)
		}
		if n := j - i; n > 0 && n <= 19 {
			c.i = j
			return v, true
		}
	}
	v, j, err := scanU64(b, i)
	if err != nil {
		return 0, false
	}
	c.i = j
	return v, true
}

// Byte-lane constants for cursor.number's eight digits at once: a lane
// of an ASCII byte c holds c+k, whose top bit tells c >= 0x80-k, and no
// carry leaves the lane. A byte of 0x80 or more is no digit (its top bit);
// its carry can only reach the lanes after it, which are not counted.
const (
	lanes1  = 0x0101010101010101
	lanesHi = 0x8080808080808080
)
