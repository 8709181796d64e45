package history

// fastJSON parses a plain JSON Lines event object (see decodeJSON) and
// applies it; ok is false when the general path must parse the line.
func (r *Reader) fastJSON(line []byte) (ev *Event, ok bool, err error) {
	var rec fastRec
	var good bool
	if r.nums, good = decodeJSON(line, &rec, r.nums[:0], &r.scratch); !good {
		return nil, false, nil
	}
	return r.applyFast(&rec, r.nums)
}

// decodeJSON decodes the JSON Lines event objects ({"p":..,"inv":..},
// {"p":..,"ret":..}, {"crash":true}) with a small scanner instead of
// encoding/json, which decodes by reflection and made JSON Lines histories
// 18 times slower to check than text ones. It accepts only well-formed
// events in plain JSON (integers or strings of digits, no escapes, each key
// once); anything else, including every malformed or unusual line and the
// header and init lines, reports false and goes to the general path, which
// also produces the error messages. It appends the numbers to nums as
// fastRec says, through scratch, an Event of the caller's.
func decodeJSON(line []byte, rec *fastRec, nums []uint64, scratch *Event) ([]uint64, bool) {
	ev := scratch
	ev.Addrs, ev.Expected, ev.New, ev.Values = ev.Addrs[:0], ev.Expected[:0], ev.New[:0], ev.Values[:0]
	*rec = fastRec{syn: JSONL, nums: int32(len(nums))}
	s := jscan{b: line}
	var f jsonFields
	if !s.object(&f, ev) {
		return nums, false
	}
	plainInv := f.ret == "" && !f.hasAddr && !f.values
	switch {
	case f.crash && !f.hasP && f.inv == "" && f.ret == "" && !f.addrs && !f.words && !f.hasAddr && !f.values:
		rec.kind = fastCrash
		return nums, true
	case !f.hasP || f.crash:
		return nums, false
	case f.inv == "read" && plainInv && f.addrs && !f.words:
		rec.kind, rec.op, rec.proc, rec.k = fastInv, Read, int32(f.p), int32(len(ev.Addrs))
		return append(nums, ev.Addrs...), true
	case f.inv == "cas" && plainInv && f.words && f.arity == 3 && !f.addrs:
		rec.kind, rec.op, rec.proc, rec.k = fastInv, CAS, int32(f.p), int32(len(ev.Addrs))
		for w := range ev.Addrs {
			nums = append(nums, ev.Addrs[w], ev.Expected[w], ev.New[w])
		}
		return nums, true
	case f.inv == "swap" && plainInv && f.words && f.arity == 2 && !f.addrs:
		rec.kind, rec.op, rec.proc, rec.k = fastInv, Swap, int32(f.p), int32(len(ev.Addrs))
		for w := range ev.Addrs {
			nums = append(nums, ev.Addrs[w], ev.New[w])
		}
		return nums, true
	case f.inv != "" || f.ret == "" || f.addrs || f.words:
		return nums, false
	}
	rec.kind, rec.proc = fastRet, int32(f.p)
	switch {
	case f.ret == "values" && !f.hasAddr && !f.values:
		rec.resp = retValues
	case f.ret == "ok" && !f.hasAddr && !f.values:
		rec.resp = retOK
	case f.ret == "fail" && f.hasAddr && (!f.values || len(ev.Values) > 0):
		rec.resp, rec.fail = retFail, f.addr
	default:
		return nums, false
	}
	rec.k = int32(len(ev.Values))
	return append(nums, ev.Values...), true
}

// jsonFields are the keys fastJSON found on a line; the numbers of
// "addrs", "words", "values" and a read's or swap's "ret" go straight
// into the event.
type jsonFields struct {
	p                     uint64
	hasP, crash           bool
	inv, ret              string // "read"/"cas"/"swap"; "ok"/"fail"/"values"
	addrs, words, hasAddr bool
	values                bool // the "values" key of a failure
	arity                 int  // of the "words" tuples: 3 (cas) or 2 (swap)
	addr                  uint64
}

// object scans one JSON object of event keys, each at most once, into f
// and ev; false for anything else.
func (s *jscan) object(f *jsonFields, ev *Event) bool {
	if !s.byte('{') {
		return false
	}
	for first := true; ; first = false {
		s.ws()
		if first && s.byte('}') {
			return false
		}
		if !first && !s.byte(',') {
			if s.byte('}') {
				break
			}
			return false
		}
		s.ws()
		key, good := s.str()
		if !good || !(s.ws2() && s.byte(':')) {
			return false
		}
		s.ws()
		if !s.field(key, f, ev) {
			return false
		}
	}
	s.ws()
	return s.end()
}

// field scans the value of one key.
func (s *jscan) field(key string, f *jsonFields, ev *Event) bool {
	switch key {
	case "p":
		if f.hasP {
			return false
		}
		f.p, f.hasP = s.integer()
		return f.hasP && f.p <= MaxProc
	case "crash":
		if f.crash || !s.lit("true") {
			return false
		}
		f.crash = true
		return true
	case "inv":
		v, good := s.str()
		if f.inv != "" || !good || (v != "read" && v != "cas" && v != "swap") {
			return false
		}
		f.inv = v
		return true
	case "ret":
		if f.ret != "" {
			return false
		}
		if s.peek('[') {
			if f.values { // both would fill ev.Values
				return false
			}
			f.ret = "values"
			return s.numbers(&ev.Values)
		}
		v, good := s.str()
		if !good || (v != "ok" && v != "fail") {
			return false
		}
		f.ret = v
		return true
	case "addrs":
		if f.addrs || !s.numbers(&ev.Addrs) {
			return false
		}
		f.addrs = true
		return true
	case "words":
		if f.words {
			return false
		}
		f.arity = s.tuples(ev)
		f.words = f.arity != 0
		return f.words
	case "values":
		if f.values || f.ret == "values" || !s.numbers(&ev.Values) {
			return false
		}
		f.values = true
		return true
	case "addr":
		if f.hasAddr {
			return false
		}
		f.addr, f.hasAddr = s.number()
		return f.hasAddr
	}
	return false
}

// jscan scans one JSON line.
type jscan struct {
	b []byte
	i int
}

func (s *jscan) ws() {
	for s.i < len(s.b) && (s.b[s.i] == ' ' || s.b[s.i] == '\t') {
		s.i++
	}
}

// ws2 is ws that always succeeds, for use inside conditions.
func (s *jscan) ws2() bool { s.ws(); return true }

func (s *jscan) end() bool { return s.i == len(s.b) }

func (s *jscan) peek(c byte) bool { return s.i < len(s.b) && s.b[s.i] == c }

func (s *jscan) byte(c byte) bool {
	if s.peek(c) {
		s.i++
		return true
	}
	return false
}

func (s *jscan) lit(w string) bool {
	if len(s.b)-s.i >= len(w) && string(s.b[s.i:s.i+len(w)]) == w {
		s.i += len(w)
		return true
	}
	return false
}

// str scans a string without escapes or control characters.
func (s *jscan) str() (string, bool) {
	if !s.byte('"') {
		return "", false
	}
	j := s.i
	for j < len(s.b) && s.b[j] != '"' {
		if c := s.b[j]; c == '\\' || c < 0x20 || c >= 0x80 {
			return "", false
		}
		j++
	}
	if j == len(s.b) {
		return "", false
	}
	v := string(s.b[s.i:j])
	s.i = j + 1
	return v, true
}

// integer scans a JSON integer without sign, fraction or exponent, and
// without superfluous leading zeros (which JSON forbids).
func (s *jscan) integer() (uint64, bool) {
	start := s.i
	if start < len(s.b) && s.b[start] == '0' && start+1 < len(s.b) && s.b[start+1] >= '0' && s.b[start+1] <= '9' {
		return 0, false
	}
	if start+1 < len(s.b) && s.b[start] == '0' && (s.b[start+1] == 'x' || s.b[start+1] == 'X') {
		return 0, false // not JSON
	}
	v, j := scanNum(s.b, start)
	if j < 0 {
		return 0, false
	}
	if j < len(s.b) {
		if ch := s.b[j]; ch == '.' || ch == 'e' || ch == 'E' {
			return 0, false
		}
	}
	s.i = j
	return v, true
}

// number scans a JSON integer or a string holding a decimal or 0x-hex
// number.
func (s *jscan) number() (uint64, bool) {
	if !s.peek('"') {
		return s.integer()
	}
	v, j := scanNum(s.b, s.i+1)
	if j < 0 || j >= len(s.b) || s.b[j] != '"' {
		return 0, false
	}
	s.i = j + 1
	return v, true
}

// numbers scans an array of numbers, appending them to *out.
func (s *jscan) numbers(out *[]uint64) bool {
	if !s.byte('[') {
		return false
	}
	s.ws()
	if s.byte(']') {
		return true
	}
	for {
		s.ws()
		v, ok := s.number()
		if !ok {
			return false
		}
		*out = append(*out, v)
		s.ws()
		if s.byte(']') {
			return true
		}
		if !s.byte(',') {
			return false
		}
	}
}

// tuples scans [[a,e,n],...] (a cas's words) into ev's Addrs, Expected
// and New, or [[a,n],...] (a swap's) into Addrs and New, and returns the
// tuples' length, 3 or 2; 0 for anything else, mixed lengths and an
// empty list included (the general path decides those).
func (s *jscan) tuples(ev *Event) int {
	if !s.byte('[') {
		return 0
	}
	arity := 0
	var t [3]uint64
	for {
		s.ws()
		if !s.byte('[') {
			return 0
		}
		n := 0
		for {
			s.ws()
			v, ok := s.number()
			if !ok || n == 3 {
				return 0
			}
			t[n] = v
			n++
			s.ws()
			if s.byte(']') {
				break
			}
			if !s.byte(',') {
				return 0
			}
		}
		if n < 2 || (arity != 0 && n != arity) {
			return 0
		}
		arity = n
		ev.Addrs = append(ev.Addrs, t[0])
		if n == 3 {
			ev.Expected = append(ev.Expected, t[1])
		}
		ev.New = append(ev.New, t[n-1])
		s.ws()
		if s.byte(']') {
			return arity
		}
		if !s.byte(',') {
			return 0
		}
	}
}
