package history

import (
	"bytes"
	"encoding/json"
)

// The JSON Lines twin of format v1: one JSON object per line, with the same
// events and the same rules. Blank lines and lines starting with '#' are
// allowed as in the text format. Numbers (addresses, values) are JSON
// integers or strings holding a decimal or 0x-hex number; strings keep
// values above 2^53 exact for tools whose JSON numbers are doubles.
//
//	{"header":"pmlin-history v1"}
//	{"init":0}
//	{"init":{"10":"0x5","11":7}}
//	{"p":1,"inv":"read","addrs":[10,11]}
//	{"p":1,"ret":[0,0]}
//	{"p":1,"inv":"cas","words":[[10,0,"0x100001"],[11,0,"0x100002"]]}
//	{"p":1,"ret":"ok"}
//	{"p":1,"ret":"fail","addr":10}
//	{"p":1,"inv":"swap","words":[[10,"0x100003"]]}
//	{"p":1,"ret":["0x100001"]}
//	{"p":2,"ret":"fail","addr":10,"values":["0x100003","0x100002"]}
//	{"crash":true}
type jsonLine struct {
	Header *string             `json:"header"`
	Init   json.RawMessage     `json:"init"`
	P      json.RawMessage     `json:"p"`
	Inv    *string             `json:"inv"`
	Addrs  []json.RawMessage   `json:"addrs"`
	Words  [][]json.RawMessage `json:"words"`
	Ret    json.RawMessage     `json:"ret"`
	Addr   json.RawMessage     `json:"addr"`
	Values []json.RawMessage   `json:"values"`
	Crash  *bool               `json:"crash"`
	// The directives of a recording that says whether it is complete
	// (closing.go).
	Recording   json.RawMessage `json:"recording"`
	End         *bool           `json:"end"`
	Interrupted json.RawMessage `json:"interrupted"`
	Of          json.RawMessage `json:"of"`
}

// jsonNumber decodes a JSON integer or a string holding a number.
func (r *Reader) jsonNumber(raw []byte, what string) (uint64, error) {
	b := bytes.TrimSpace(raw)
	if len(b) >= 2 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return 0, r.jsonError(err, b, what)
		}
		return r.number([]byte(s), what)
	}
	return r.number(b, what)
}

func (r *Reader) parseJSON(line []byte) (*Event, error) {
	if line[0] != '{' {
		return nil, r.fail(ErrSyntax, nil, "expected a JSON object (this history is JSON Lines: its first line is one)")
	}
	if k, dup := repeatedKey(line); dup {
		return nil, r.fail(ErrSyntax, nil, "key %q appears twice on the line", k)
	}
	var j jsonLine
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&j); err != nil {
		return nil, r.jsonError(err, line, "")
	}
	// Whatever follows the object must be blank: the decoder's More says
	// false before a stray "}" or "]" too, so it cannot tell.
	if rest := bytes.TrimSpace(line[dec.InputOffset():]); len(rest) > 0 {
		return nil, r.fail(ErrSyntax, nil, "more than one JSON value on the line (%q after the object)", clip(rest))
	}
	if r.closed != 0 {
		return nil, r.afterClosing()
	}
	set := 0
	for _, present := range []bool{j.Header != nil, j.Init != nil, j.P != nil, j.Crash != nil, j.Recording != nil, j.End != nil, j.Interrupted != nil} {
		if present {
			set++
		}
	}
	if set != 1 {
		return nil, r.fail(ErrSyntax, nil, `a JSON line is exactly one of {"header":...}, {"init":...}, {"p":...,"inv"|"ret":...}, {"crash":true}, {"recording":M}, {"end":true} or {"interrupted":N,"of":M}`)
	}
	switch {
	case j.recording():
		return nil, r.parseRecordingJSON(&j)
	case j.Header != nil:
		const magic = "pmlin-history "
		if len(*j.Header) <= len(magic) || (*j.Header)[:len(magic)] != magic {
			return nil, r.fail(ErrSyntax, nil, "the header is %q", "pmlin-history v1")
		}
		return nil, r.header((*j.Header)[len(magic):])
	case j.Init != nil:
		return nil, r.jsonInit(j.Init)
	case j.Crash != nil:
		if !*j.Crash {
			return nil, r.fail(ErrSyntax, nil, `a crash line is {"crash":true}`)
		}
		return r.crashEvent(), nil
	}
	p, err := r.procID(bytes.TrimSpace(j.P))
	if err != nil {
		return nil, err
	}
	switch {
	case j.Inv != nil && j.Ret == nil:
		return r.jsonInv(p, &j)
	case j.Ret != nil && j.Inv == nil:
		return r.jsonRet(p, &j)
	}
	return nil, r.fail(ErrSyntax, nil, `process %d: a line has exactly one of "inv" and "ret"`, p)
}

func (r *Reader) jsonInit(raw json.RawMessage) error {
	b := bytes.TrimSpace(raw)
	if len(b) > 0 && b[0] == '{' {
		// Decode token by token, in the file's order: a map would keep
		// only the last of two equal keys, which must be an error as in
		// the text format ("init 10=1 10=2").
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.UseNumber()
		if _, err := dec.Token(); err != nil {
			return r.jsonError(err, b, "init")
		}
		for dec.More() {
			tok, err := dec.Token()
			if err != nil {
				return r.jsonError(err, b, "init")
			}
			k, _ := tok.(string)
			var raw json.RawMessage
			if err := dec.Decode(&raw); err != nil {
				return r.jsonError(err, b, "init")
			}
			a, err := r.number([]byte(k), "address")
			if err != nil {
				return err
			}
			v, err := r.jsonNumber(raw, "initial value")
			if err != nil {
				return err
			}
			if err := r.setInitWord(a, v); err != nil {
				return err
			}
		}
		return nil
	}
	v, err := r.jsonNumber(b, "initial value")
	if err != nil {
		return err
	}
	return r.setInitDefault(v)
}

func (r *Reader) jsonInv(p int32, j *jsonLine) (*Event, error) {
	ev := r.clearEvent()
	if j.Addr != nil || j.Values != nil {
		return nil, r.fail(ErrSyntax, nil, `process %d: "addr" and "values" belong to a failed cas's ret`, p)
	}
	switch *j.Inv {
	case "read":
		if j.Words != nil {
			return nil, r.fail(ErrSyntax, nil, `process %d: a read has "addrs", not "words"`, p)
		}
		ev.Op = Read
		for _, a := range j.Addrs {
			if err := r.addWord(r.jsonNumber, a); err != nil {
				return nil, err
			}
		}
	case "cas":
		if j.Addrs != nil {
			return nil, r.fail(ErrSyntax, nil, `process %d: a cas has "words" ([address, expected, new] triples), not "addrs"`, p)
		}
		ev.Op = CAS
		for _, w := range j.Words {
			if len(w) != 3 {
				return nil, r.fail(ErrSyntax, nil, "process %d: a cas word is [address, expected, new]", p)
			}
			if err := r.addWord(r.jsonNumber, w[0], w[1], w[2]); err != nil {
				return nil, err
			}
		}
	case "swap":
		if j.Addrs != nil {
			return nil, r.fail(ErrSyntax, nil, `process %d: a swap has "words" ([address, new] pairs), not "addrs"`, p)
		}
		ev.Op = Swap
		for _, w := range j.Words {
			if len(w) != 2 {
				return nil, r.fail(ErrSyntax, nil, "process %d: a swap word is [address, new]", p)
			}
			if err := r.addWord(r.jsonNumber, w[0], w[1]); err != nil {
				return nil, err
			}
		}
	default:
		return nil, r.fail(ErrSyntax, nil, "process %d: unknown operation %q (expected read, cas or swap)", p, *j.Inv)
	}
	return r.invoke(p)
}

func (r *Reader) jsonRet(p int32, j *jsonLine) (*Event, error) {
	if j.Addrs != nil || j.Words != nil {
		return nil, r.fail(ErrSyntax, nil, `process %d: a ret has no "addrs" or "words"`, p)
	}
	idx, ps, err := r.pendingFor(p)
	if err != nil {
		return nil, err
	}
	ev := &r.cur.Event
	ev.Values, ev.OK, ev.FailAddr = ev.Values[:0], false, 0
	values := func(vals []json.RawMessage, what string) error { return parseValues(r, vals, r.jsonNumber, what) }
	b := bytes.TrimSpace(j.Ret)
	if ps.op != CAS {
		var vals []json.RawMessage
		if len(b) == 0 || b[0] != '[' || json.Unmarshal(b, &vals) != nil {
			return nil, r.fail(ErrIllFormed, nil, "process %d: the %s of line %d returns an array of values", p, ps.op, ps.invLine)
		}
		if j.Addr != nil || j.Values != nil {
			return nil, r.fail(ErrSyntax, nil, `process %d: "addr" and "values" belong to a failed cas's ret`, p)
		}
		if err := values(vals, "returned value"); err != nil {
			return nil, err
		}
		return r.respond(idx, ps, response{kind: retValues})
	}
	var s string
	if json.Unmarshal(b, &s) != nil || (s != "ok" && s != "fail") {
		return nil, r.fail(ErrIllFormed, nil, `process %d: the cas of line %d returns "ok" or "fail" (with "addr", and optionally "values")`, p, ps.invLine)
	}
	if s == "ok" {
		if j.Addr != nil || j.Values != nil {
			return nil, r.fail(ErrSyntax, nil, `process %d: a successful cas has no "addr" or "values"`, p)
		}
		return r.respond(idx, ps, response{kind: retOK})
	}
	if j.Addr == nil {
		return nil, r.fail(ErrSyntax, nil, `process %d: a failed cas names the address that differed in "addr"`, p)
	}
	a, err := r.jsonNumber(j.Addr, "failed address")
	if err != nil {
		return nil, err
	}
	if j.Values != nil && len(j.Values) == 0 {
		return nil, r.fail(ErrSyntax, nil, `process %d: "values" of a failed cas holds one value per address (leave it out to report none)`, p)
	}
	if err := values(j.Values, "reported value"); err != nil {
		return nil, err
	}
	return r.respond(idx, ps, response{kind: retFail, failAddr: a})
}

// repeatedKey finds a key that appears twice in the line's top-level
// object: encoding/json would keep the last value silently, and a line
// that says two things must not be read as either. A line that is not
// valid JSON reports nothing here: the decoder names its error.
func repeatedKey(line []byte) (string, bool) {
	dec := json.NewDecoder(bytes.NewReader(line))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return "", false
	}
	seen := map[string]bool{}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return "", false
		}
		k, _ := t.(string)
		if seen[k] {
			return k, true
		}
		seen[k] = true
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return "", false
		}
	}
	return "", false
}
