package history

// fastText parses the common event lines ("<p> inv read ...", "<p> inv cas
// a:e:n ...", "<p> inv swap a:n ...", "<p> ret ...") in one pass over the bytes, without splitting
// fields first. It handles only lines in the plain form the recorders
// write: single spaces or tabs between tokens, decimal or 0x-hex numbers
// that fit in 64 bits. Anything else, including every malformed line,
// returns ok=false and is parsed again by the general path, which gives the
// precise error. It exists because field splitting and re-scanning cost a
// third of the analyzer's time on large histories.
func (r *Reader) fastText(line []byte) (ev *Event, ok bool, err error) {
	c := cursor{b: line}
	// A process id is decimal, at most 10 digits (as procID requires).
	if len(line) > 1 && line[0] == '0' && (line[1] == 'x' || line[1] == 'X') {
		return nil, false, nil
	}
	p, good := c.number()
	if !good || c.i > 10 || p > MaxProc || !c.space() {
		return nil, false, nil
	}
	proc := int32(p)
	switch {
	case c.word("inv"):
		if !c.space() {
			return nil, false, nil
		}
		ev := r.clearEvent()
		switch {
		case c.word("read"):
			ev.Op = Read
			for c.space() {
				a, good := c.number()
				if !good {
					return nil, false, nil
				}
				ev.Addrs = append(ev.Addrs, a)
			}
		case c.word("cas"):
			ev.Op = CAS
			for c.space() {
				a, g1 := c.number()
				g2 := g1 && c.colon()
				e, g3 := c.number()
				g4 := g2 && g3 && c.colon()
				n, g5 := c.number()
				if !g4 || !g5 {
					return nil, false, nil
				}
				ev.Addrs = append(ev.Addrs, a)
				ev.Expected = append(ev.Expected, e)
				ev.New = append(ev.New, n)
			}
		case c.word("swap"):
			ev.Op = Swap
			for c.space() {
				a, g1 := c.number()
				g2 := g1 && c.colon()
				n, g3 := c.number()
				if !g2 || !g3 {
					return nil, false, nil
				}
				ev.Addrs = append(ev.Addrs, a)
				ev.New = append(ev.New, n)
			}
		default:
			return nil, false, nil
		}
		if !c.end() {
			return nil, false, nil
		}
		ev, err := r.invoke(proc)
		return ev, true, err
	case c.word("ret"):
		idx, known := r.lookupProc(proc)
		if !known || !r.procs[idx].pending || !c.space() {
			return nil, false, nil
		}
		ps := &r.procs[idx]
		ev := &r.ev
		ev.Values, ev.OK, ev.FailAddr = ev.Values[:0], false, 0
		if ps.op != CAS {
			// The values, read here rather than by c.values: this is
			// half of all the lines.
			for {
				v, good := c.number()
				if !good {
					return nil, false, nil
				}
				ev.Values = append(ev.Values, v)
				if !c.space() {
					break
				}
			}
			if !c.end() {
				return nil, false, nil
			}
			ev, err := r.respond(idx, ps, response{kind: retValues})
			return ev, true, err
		}
		var resp response
		switch {
		case c.word("ok"):
			resp.kind = retOK
		case c.word("fail"):
			if !c.space() {
				return nil, false, nil
			}
			a, good := c.number()
			if !good {
				return nil, false, nil
			}
			if c.space() && !c.values(&ev.Values) {
				return nil, false, nil
			}
			resp = response{kind: retFail, failAddr: a}
		default:
			return nil, false, nil
		}
		if !c.end() {
			return nil, false, nil
		}
		ev, err := r.respond(idx, ps, resp)
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

// number consumes a decimal or 0x-hex number that fits in 64 bits.
func (c *cursor) number() (uint64, bool) {
	v, j, err := scanU64(c.b, c.i)
	if err != nil {
		return 0, false
	}
	c.i = j
	return v, true
}
