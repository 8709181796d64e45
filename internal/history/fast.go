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
	nums, end := decodeTextAt(line, 0, rec, nums)
	return nums, end == len(line)
}

// decodeTextAt is decodeText for the line that starts at b[pos] and ends
// at the first newline (a "\r\n" counts as one) or at the end of b: it
// returns the end of the line's content, or -1 if the line does not
// decode. A chunk's worker decodes each line where it starts, without
// first looking for its end (a search was a tenth of decoding).
//
// The position in the line is a local (i) passed to and returned by the
// scanning helpers, not a field of a struct: kept in a register, it saved a
// load and a store per step, a third of this function's instructions (it
// runs on every line; a position below 0 means the line does not decode).
func decodeTextAt(b []byte, pos int, rec *fastRec, nums []uint64) ([]uint64, int) {
	*rec = fastRec{syn: Text, nums: int32(len(nums))}
	// A process id is decimal, at most 10 digits (as procID requires):
	// scanned here, as only decimal digits (a 0x prefix stops it at the
	// x, which is no blank: the line does not decode).
	i, p := pos, uint64(0)
	if pos+1 < len(b) && b[pos]-'0' <= 9 && b[pos+1] == ' ' {
		// One digit and a space, the usual start: no loop (its
		// compares were a tenth of this function's instructions).
		p, i = uint64(b[pos]-'0'), pos+1
	} else {
		for i < len(b) && i-pos <= 10 {
			d := b[i] - '0'
			if d > 9 {
				break
			}
			p = p*10 + uint64(d)
			i++
		}
		if i == pos || i-pos > 10 || p > MaxProc {
			return nums, -1
		}
	}
	if i = skipSpace(b, i); i < 0 {
		return nums, -1
	}
	rec.proc = int32(p)
	// Each word is tried only where its first byte says it may be (a
	// word that does not match cost a compare each).
	switch b[i] { // (skipSpace leaves a byte after the blanks)
	case 'i':
		if i = skipSpace(b, skipWord(b, i, "inv")); i < 0 {
			return nums, -1
		}
		rec.kind = fastInv
		switch b[i] {
		case 'r':
			if i = skipWord(b, i, "read"); i < 0 {
				return nums, -1
			}
			rec.op = Read
			for {
				j := skipSpace(b, i)
				if j < 0 {
					break
				}
				var a uint64
				if a, i = scanNum(b, j); i < 0 {
					return nums, -1
				}
				nums = append(nums, a)
			}
		case 'c':
			if i = skipWord(b, i, "cas"); i < 0 {
				return nums, -1
			}
			rec.op = CAS
			return tuples(b, i, rec, nums, 3)
		case 's':
			if i = skipWord(b, i, "swap"); i < 0 {
				return nums, -1
			}
			rec.op = Swap
			return tuples(b, i, rec, nums, 2)
		default:
			return nums, -1
		}
		rec.k = int32(len(nums)) - rec.nums
		return nums, lineEnd(b, i)
	case 'r':
		if i = skipSpace(b, skipWord(b, i, "ret")); i < 0 {
			return nums, -1
		}
		rec.kind = fastRet
		switch b[i] {
		case 'o':
			if i = skipWord(b, i, "ok"); i < 0 {
				return nums, -1
			}
			rec.resp = retOK
			return nums, lineEnd(b, i)
		case 'f':
			if i = skipSpace(b, skipWord(b, i, "fail")); i < 0 {
				return nums, -1
			}
			var a uint64
			if a, i = scanNum(b, i); i < 0 {
				return nums, -1
			}
			if j := skipSpace(b, i); j >= 0 {
				if nums, i = scanValues(b, j, nums); i < 0 {
					return nums, -1
				}
			}
			rec.resp, rec.fail = retFail, a
		default:
			// The values: half of all the lines.
			if nums, i = scanValues(b, i, nums); i < 0 {
				return nums, -1
			}
			rec.resp = retValues
		}
		rec.k = int32(len(nums)) - rec.nums
		return nums, lineEnd(b, i)
	}
	return nums, -1
}

// scanValues scans one or more numbers from b[i:] separated by runs of
// blanks, appending them to nums; it returns the position after the last
// one, or -1 if one does not scan.
func scanValues(b []byte, i int, nums []uint64) ([]uint64, int) {
	for {
		var v uint64
		if v, i = scanNum(b, i); i < 0 {
			return nums, -1
		}
		nums = append(nums, v)
		j := skipSpace(b, i)
		if j < 0 {
			return nums, i
		}
		i = j
	}
}

// tuples decodes the words of a cas (a:e:n, arity 3) or a swap (a:n,
// arity 2) from b[i:] to the end of the line, as they come (a, e, n, a,
// e, n, ...).
func tuples(b []byte, i int, rec *fastRec, nums []uint64, arity int) ([]uint64, int) {
	k := int32(0) // (counted: len(nums) divided by a variable arity is a division)
	for {
		j := skipSpace(b, i)
		if j < 0 {
			break
		}
		var a, e uint64
		if a, i = scanNum(b, j); i < 0 || i >= len(b) || b[i] != ':' {
			return nums, -1
		}
		if e, i = scanNum(b, i+1); i < 0 {
			return nums, -1
		}
		if arity == 2 {
			// (An append of a variable length calls memmove: one per
			// word was a tenth of this function.)
			nums = append(nums, a, e)
			k++
			continue
		}
		if i >= len(b) || b[i] != ':' {
			return nums, -1
		}
		var n uint64
		if n, i = scanNum(b, i+1); i < 0 {
			return nums, -1
		}
		nums = append(nums, a, e, n)
		k++
	}
	rec.k = k
	return nums, lineEnd(b, i)
}

// skipSpace skips one run of spaces and tabs at b[i:]: the position after
// it, or -1 if there is none or the line ends after it (then nothing
// follows but blanks), or if i is -1 (what failed before it).
func skipSpace(b []byte, i int) int {
	if i >= 0 && i+1 < len(b) && b[i] == ' ' && b[i+1] > ' ' {
		return i + 1 // the usual single space
	}
	return skipBlanks(b, i)
}

// skipBlanks is skipSpace's general case, apart so that skipSpace inlines.
func skipBlanks(b []byte, i int) int {
	if i < 0 {
		return -1
	}
	j := i
	for j < len(b) && (b[j] == ' ' || b[j] == '\t') {
		j++
	}
	if j == i || j == len(b) {
		return -1
	}
	return j
}

// skipWord skips w at b[i:] if it is a whole token (followed by a blank,
// a newline or a carriage return, which the caller's next step checks is
// one before a newline): the position after it, or -1. (Small enough to
// inline, so that w is a constant and the comparison a load or two.)
func skipWord(b []byte, i int, w string) int {
	j := i + len(w)
	if j > len(b) || string(b[i:j]) != w {
		return -1
	}
	if j < len(b) {
		if c := b[j]; c != ' ' && c != '\t' && c != '\n' && c != '\r' {
			return -1
		}
	}
	return j
}

// lineEnd is i if the line ends at b[i] (b ends, or a newline or a
// "\r\n" starts there), else -1.
func lineEnd(b []byte, i int) int {
	if i == len(b) || b[i] == '\n' || b[i] == '\r' && i+1 < len(b) && b[i+1] == '\n' {
		return i
	}
	return -1
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
		ev := &r.cur.Event
		ev.Values, ev.OK, ev.FailAddr = ev.Values[:0], false, 0
		for _, v := range ns[:k] {
			ev.Values = append(ev.Values, v)
		}
		ev, err := r.respond(idx, ps, response{kind: rec.resp, failAddr: rec.fail})
		return ev, true, err
	}
	return nil, false, nil
}

// scanNum scans a decimal or 0x-hex number that fits in 64 bits at
// b[i:]: its value and the position after it, or -1 if there is none. The
// numbers of the common lines (up to 19 decimal or 16 hex digits) are
// scanned here, in loops without a range check or an error value: this is
// the innermost loop of reading (a third of the decoding time went to the
// call to scanU64 and its checks). Anything longer, which may overflow, is
// left to scanU64, so a number means the same everywhere.
func scanNum(b []byte, i int) (uint64, int) {
	if uint(i) >= uint(len(b)) {
		return 0, -1
	}
	var v uint64
	j := i
	if b[i] == '0' && i+2 < len(b) && b[i+1]|0x20 == 'x' { // 0x or 0X
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
			return v, j
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
			return v, j
		}
	}
	v, j, err := scanU64(b, i)
	if err != nil {
		return 0, -1
	}
	return v, j
}

// Byte-lane constants for scanNum's eight digits at once: a lane
// of an ASCII byte c holds c+k, whose top bit tells c >= 0x80-k, and no
// carry leaves the lane. A byte of 0x80 or more is no digit (its top bit);
// its carry can only reach the lanes after it, which are not counted.
const (
	lanes1  = 0x0101010101010101
	lanesHi = 0x8080808080808080
)
