package history

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"

	"github.com/pmlin/pmlin/model"
)

// v2JSON is one line of the JSON Lines twin of version 2: version 1's
// keys, plus "object" (a declaration's name, or the object an operation
// acts on), "model" and "params" (a declaration's), and "args" (a
// generic operation's arguments).
//
//	{"header":"pmlin-history v2"}
//	{"object":"q","model":"queue","params":{"cap":4}}
//	{"p":1,"inv":"enq","object":"q","args":["0x100001"]}
//	{"p":1,"ret":["ok"]}
//	{"p":2,"ret":"?"}
//	{"p":1,"inv":"read","addrs":[10,11]}       (version 1: the object words)
//	{"crash":true}
type v2JSON struct {
	Header *string              `json:"header"`
	Object *string              `json:"object"`
	Model  *string              `json:"model"`
	Params json.RawMessage      `json:"params"`
	Init   json.RawMessage      `json:"init"`
	P      json.RawMessage      `json:"p"`
	Inv    *string              `json:"inv"`
	Args   *[]json.RawMessage   `json:"args"`
	Addrs  *[]json.RawMessage   `json:"addrs"`
	Words  *[][]json.RawMessage `json:"words"`
	Ret    json.RawMessage      `json:"ret"`
	Addr   json.RawMessage      `json:"addr"`
	Values *[]json.RawMessage   `json:"values"`
	Crash  *bool                `json:"crash"`
}

// v2JSONKeys are the keys a version 2 JSON line may have, in the order of
// v2JSON's fields.
var v2JSONKeys = func() []string {
	var keys []string
	t := reflect.TypeFor[v2JSON]()
	for i := range t.NumField() {
		keys = append(keys, strings.TrimSuffix(t.Field(i).Tag.Get("json"), ",omitempty"))
	}
	return keys
}()

// present lists the keys the line has.
func (j *v2JSON) present() []string {
	v := reflect.ValueOf(j).Elem()
	var keys []string
	for i := range v.NumField() {
		if !v.Field(i).IsNil() {
			keys = append(keys, v2JSONKeys[i])
		}
	}
	return keys
}

// only refuses any key of the line but those allowed, for a line of the
// kind what.
func (r *v2Reader) only(j *v2JSON, what string, allowed ...string) error {
	for _, k := range j.present() {
		if !contains1(allowed, k) {
			return r.fail(ErrSyntax, 0, "key %q does not belong on %s line (its keys are %s)", k, what, strings.Join(allowed, ", "))
		}
	}
	return nil
}

func contains1(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// jsonLine reads a line of the JSON Lines syntax (its comment removed).
func (r *v2Reader) jsonLine(line string) error {
	if strings.IndexByte(line, 0) >= 0 {
		return r.fail(ErrSyntax, 0, "NUL byte: this is not a text history")
	}
	if line[0] != '{' {
		return r.fail(ErrSyntax, 0, "expected a JSON object (this history is JSON Lines: its header is one)")
	}
	var j v2JSON
	dec := json.NewDecoder(strings.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&j); err != nil {
		return r.jsonError(err, line)
	}
	if rest := strings.TrimSpace(line[dec.InputOffset():]); rest != "" {
		// (Decoder.More says false before a stray '}' or ']'.)
		return r.fail(ErrSyntax, 0, "more than one JSON value on the line (%q after the object)", clipString(rest))
	}
	if k, dup := repeatedTopKey(line); dup {
		return r.fail(ErrSyntax, 0, "key %q appears twice on the line", k)
	}
	if k, ok := inexactKey(line); ok {
		return r.fail(ErrSyntax, 0, "unknown key %q (a version 2 line's keys are %s, in lower case)", k, strings.Join(v2JSONKeys, ", "))
	}
	if !r.sawHeader {
		if j.Header == nil {
			return r.noHeader()
		}
		if err := r.only(&j, "the header", "header"); err != nil {
			return err
		}
		version, ok := strings.CutPrefix(*j.Header, "pmlin-history ")
		if !ok {
			return r.noHeader()
		}
		return r.headerVersion(version, 0)
	}
	kinds := 0
	for _, present := range []bool{j.Header != nil, j.Init != nil, j.P != nil, j.Crash != nil, j.Object != nil && j.P == nil} {
		if present {
			kinds++
		}
	}
	if kinds != 1 {
		return r.fail(ErrSyntax, 0, `a JSON line is exactly one of {"object":...,"model":...}, {"p":...,"inv"|"ret":...}, {"crash":true}, {"init":...}`)
	}
	switch {
	case j.Header != nil:
		return r.fail(ErrIllFormed, 0, "the pmlin-history header must be the first line that is not blank or a comment")
	case j.Crash != nil:
		if err := r.only(&j, "a crash", "crash"); err != nil {
			return err
		}
		if !*j.Crash {
			return r.fail(ErrSyntax, 0, `a crash line is {"crash":true}`)
		}
		r.crash()
		return nil
	case j.Init != nil:
		if err := r.only(&j, "an init", "init"); err != nil {
			return err
		}
		return r.jsonInit(j.Init)
	case j.P == nil:
		return r.jsonDeclare(&j)
	}
	p, err := r.procID(tok{s: string(bytes.TrimSpace(j.P))})
	if err != nil {
		return err
	}
	switch {
	case j.Inv != nil && j.Ret == nil:
		return r.jsonInv(p, &j)
	case j.Ret != nil && j.Inv == nil:
		return r.jsonRet(p, &j)
	}
	return r.fail(ErrSyntax, 0, `process %d: a line has exactly one of "inv" and "ret"`, p)
}

// topKeys calls f with each key of the top-level object of a line that is
// valid JSON (the decoder took it), unquoted, until f says stop. A scan by
// hand: a decoder's tokens cost a formatted error per member (most of the
// time of a line).
func topKeys(line string, f func(k string) (stop bool)) {
	depth, wantKey := 0, false
	for i := 0; i < len(line); i++ {
		switch c := line[i]; c {
		case '{', '[':
			depth++
			wantKey = c == '{' && depth == 1
		case '}', ']':
			depth--
		case ',':
			wantKey = depth == 1
		case '"':
			j := i + 1
			for ; j < len(line) && line[j] != '"'; j++ {
				if line[j] == '\\' {
					j++
				}
			}
			if j >= len(line) {
				return // (not valid JSON: the decoder said so first)
			}
			if wantKey {
				k := line[i : j+1]
				if strings.IndexByte(k, '\\') >= 0 {
					json.Unmarshal([]byte(k), &k) // (valid JSON: it unquotes)
				} else {
					k = k[1 : len(k)-1]
				}
				if f(k) {
					return
				}
				wantKey = false
			}
			i = j
		}
	}
}

// repeatedTopKey finds a key that appears twice in a line's top-level
// object: encoding/json would keep the last value silently, and it matches
// keys without regard to case, so keys are compared so too.
func repeatedTopKey(line string) (dup string, found bool) {
	var seen [8]string
	keys := seen[:0]
	topKeys(line, func(k string) bool {
		for _, o := range keys {
			if strings.EqualFold(o, k) {
				dup, found = k, true
				return true
			}
		}
		keys = append(keys, k)
		return false
	})
	return dup, found
}

// inexactKey finds a key that encoding/json took for one of v2JSON's
// without being it ("P" for "p"): a key is one of them exactly.
func inexactKey(line string) (bad string, found bool) {
	topKeys(line, func(k string) bool {
		found = !contains1(v2JSONKeys, k)
		bad = k
		return found
	})
	return bad, found
}

// jsonError says why the decoder refused a line, in pmlin's words.
func (r *v2Reader) jsonError(err error, line string) error {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) || errors.As(err, &syn) && int(syn.Offset) >= len(line):
		return r.fail(ErrSyntax, 0, "the JSON ends before its object or string does: JSON Lines has one whole object on each line")
	case errors.As(err, &syn):
		off := max(int(syn.Offset)-1, 0)
		return r.fail(ErrSyntax, 0, "not valid JSON: unexpected %q at byte %d of the line", rune(line[off]), off+1)
	case errors.As(err, &typ):
		return r.fail(ErrSyntax, 0, "%q is %s, expected %s", typ.Field, article(typ.Value), v2JSONExpected(typ.Field))
	}
	if k, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		return r.fail(ErrSyntax, 0, "unknown key %s (a version 2 line's keys are %s)", k, strings.Join(v2JSONKeys, ", "))
	}
	return r.fail(ErrSyntax, 0, "not valid JSON")
}

// v2JSONExpected says what a key of a JSON line holds.
func v2JSONExpected(key string) string {
	switch key {
	case "header":
		return `a string ("pmlin-history v2")`
	case "object", "model":
		return "a string naming it"
	case "inv":
		return "a string naming the operation"
	case "args", "values":
		return "an array of values"
	case "addrs":
		return "an array of addresses"
	case "words":
		return "an array of arrays, one per word ([address, expected, new] for a cas, [address, new] for a swap)"
	case "crash":
		return "true"
	}
	return "a number or a string holding one"
}

// jsonValue decodes a value: a JSON integer, or a string holding a number
// (decimal or 0x hex) or a symbol.
func (r *v2Reader) jsonValue(raw json.RawMessage, what string) (model.Value, error) {
	b := bytes.TrimSpace(raw)
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return model.Value{}, r.fail(ErrSyntax, 0, "%s %s is not a JSON string", what, clip(b))
		}
		return r.value(s, 0, what)
	}
	if len(b) > 0 && (b[0] == '-' || '0' <= b[0] && b[0] <= '9') {
		n, err := r.number(string(b), 0, what)
		return model.Number(n), err
	}
	return model.Value{}, r.fail(ErrSyntax, 0, "%s %s is not a value: a value is a JSON integer, or a string holding a number or a symbol (\"nil\", \"ok\", \"fail\", \"empty\", \"true\", \"false\")", what, clip(b))
}

// jsonNumber decodes a number (a words operation's address or value).
func (r *v2Reader) jsonNumber(raw json.RawMessage, what string) (model.Value, error) {
	v, err := r.jsonValue(raw, what)
	if err == nil && v.Sym != model.Num {
		return v, r.fail(ErrSyntax, 0, "%s %q is not a number (decimal or 0x hex)", what, v)
	}
	return v, err
}

// jsonObjectTokens decodes a JSON object's members in the order written
// (a map would keep only the last of two equal keys, which must be an
// error), handing each to f.
func (r *v2Reader) jsonObjectTokens(b []byte, what string, f func(key string, raw json.RawMessage) error) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return r.fail(ErrSyntax, 0, "%q is not a JSON object", what)
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return r.fail(ErrSyntax, 0, "%q is not a valid JSON object", what)
		}
		k, _ := t.(string)
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return r.fail(ErrSyntax, 0, "%q is not a valid JSON object", what)
		}
		if err := f(k, raw); err != nil {
			return err
		}
	}
	return nil
}

func (r *v2Reader) jsonDeclare(j *v2JSON) error {
	if err := r.only(j, "an object declaration", "object", "model", "params"); err != nil {
		return err
	}
	if j.Model == nil {
		return r.fail(ErrSyntax, 0, `an object is declared as {"object":NAME,"model":MODEL} (with "params":{...} if it has any)`)
	}
	var params []model.Param
	if b := bytes.TrimSpace(j.Params); len(b) > 0 && !bytes.Equal(b, []byte("null")) {
		err := r.jsonObjectTokens(b, "params", func(k string, raw json.RawMessage) error {
			v := bytes.TrimSpace(raw)
			var s string
			switch {
			case len(v) > 0 && v[0] == '"':
				if err := json.Unmarshal(v, &s); err != nil {
					return r.fail(ErrSyntax, 0, "parameter %s is not a JSON string", k)
				}
			case len(v) > 0 && '0' <= v[0] && v[0] <= '9':
				if _, err := parseU64(v); err != nil {
					return r.fail(ErrSyntax, 0, "parameter %s is %s: a parameter's value is a string or an unsigned integer", k, clip(v))
				}
				s = string(v)
			default:
				return r.fail(ErrSyntax, 0, "parameter %s is %s: a parameter's value is a string or an unsigned integer", k, clip(v))
			}
			for _, p := range params {
				if p.Key == k {
					return r.fail(ErrIllFormed, 0, "object %s: parameter %s is given twice", *j.Object, k)
				}
			}
			params = append(params, model.Param{Key: k, Value: s})
			return nil
		})
		if err != nil {
			return err
		}
	}
	return r.declare(*j.Object, 0, *j.Model, 0, params)
}

func (r *v2Reader) jsonInit(raw json.RawMessage) error {
	b := bytes.TrimSpace(raw)
	if len(b) > 0 && b[0] == '{' {
		return r.jsonObjectTokens(b, "init", func(k string, raw json.RawMessage) error {
			a, err := r.number(k, 0, "address")
			if err != nil {
				return err
			}
			v, err := r.jsonNumber(raw, "initial value")
			if err != nil {
				return err
			}
			return r.addInit(false, a, v.N)
		})
	}
	v, err := r.jsonNumber(b, "initial value")
	if err != nil {
		return err
	}
	return r.addInit(true, 0, v.N)
}

func (r *v2Reader) jsonInv(p int64, j *v2JSON) error {
	var obj int
	var err error
	if j.Object == nil {
		if !isWordsOp(*j.Inv) {
			return r.fail(ErrSyntax, 0, `process %d: an operation names its object in "object" (only version 1's read, cas and swap act on the object words without it)`, p)
		}
		obj, err = r.wordsObject()
	} else {
		obj, err = r.object(*j.Object, 0)
	}
	if err != nil {
		return err
	}
	o := &r.h.Objects[obj]
	name := *j.Inv
	var args []model.Value
	if o.Model != wordsModel {
		if err := r.only(j, "a generic invocation", "p", "inv", "object", "args"); err != nil {
			return err
		}
		if !validName(name) {
			return r.fail(ErrSyntax, 0, "process %d: operation name %q is not a name ([a-z][a-z0-9_-]*)", p, clipString(name))
		}
		if j.Args != nil {
			for _, a := range *j.Args {
				v, err := r.jsonValue(a, "argument")
				if err != nil {
					return err
				}
				args = append(args, v)
			}
		}
		return r.invoke(p, obj, name, args)
	}
	switch name {
	case "read":
		if err := r.only(j, "a read", "p", "inv", "object", "addrs"); err != nil {
			return err
		}
		if j.Addrs != nil {
			for _, a := range *j.Addrs {
				v, err := r.jsonNumber(a, "address")
				if err != nil {
					return err
				}
				args = append(args, v)
			}
		}
	case "cas", "swap":
		if err := r.only(j, "a "+name, "p", "inv", "object", "words"); err != nil {
			return err
		}
		stride := wordsStride(name)
		if j.Words != nil {
			for _, w := range *j.Words {
				if len(w) != stride {
					return r.fail(ErrSyntax, 0, "process %d: a %s word is [%s]", p, name, strings.Join(wordsParts[stride], ", "))
				}
				for k, raw := range w {
					v, err := r.jsonNumber(raw, wordsParts[stride][k])
					if err != nil {
						return err
					}
					args = append(args, v)
				}
			}
		}
	default:
		return r.fail(ErrIllFormed, 0, "process %d: object %s is of model words: its operations are read, cas and swap, not %q", p, o.Name, clipString(name))
	}
	return r.invoke(p, obj, name, args)
}

func (r *v2Reader) jsonRet(p int64, j *v2JSON) error {
	i, err := r.pendingOp(p)
	if err != nil {
		return err
	}
	op := &r.h.Ops[i]
	b := bytes.TrimSpace(j.Ret)
	if bytes.Equal(b, []byte(`"?"`)) {
		if err := r.only(j, "an unknown response", "p", "ret"); err != nil {
			return err
		}
		return r.respond(i, nil, true)
	}
	var res []model.Value
	isCAS := r.h.Objects[op.Object].Model == wordsModel && op.Name == "cas"
	switch {
	case isCAS && (bytes.Equal(b, []byte(`"ok"`)) || bytes.Equal(b, []byte(`"fail"`))):
		if bytes.Equal(b, []byte(`"ok"`)) {
			if err := r.only(j, "a successful cas's response", "p", "ret"); err != nil {
				return err
			}
			return r.respond(i, []model.Value{model.Sym(model.OK)}, false)
		}
		if j.Addr == nil {
			return r.fail(ErrSyntax, 0, `process %d: a failed cas names the address that differed in "addr"`, p)
		}
		a, err := r.jsonNumber(j.Addr, "failed address")
		if err != nil {
			return err
		}
		res = append(res, model.Sym(model.Fail), a)
		if j.Values != nil {
			if len(*j.Values) == 0 {
				return r.fail(ErrSyntax, 0, `process %d: "values" of a failed cas holds one value per address (leave it out to report none)`, p)
			}
			for _, raw := range *j.Values {
				v, err := r.jsonNumber(raw, "reported value")
				if err != nil {
					return err
				}
				res = append(res, v)
			}
		}
		return r.respond(i, res, false)
	case isCAS:
		return r.fail(ErrIllFormed, 0, `process %d: the cas of line %d returns "ok" or "fail" (with "addr", and optionally "values"), or "?"`, p, op.Line)
	}
	if err := r.only(j, "a response", "p", "ret"); err != nil {
		return err
	}
	what := "result"
	if r.h.Objects[op.Object].Model == wordsModel {
		what = "returned value"
	}
	if len(b) > 0 && b[0] == '[' {
		var vals []json.RawMessage
		if err := json.Unmarshal(b, &vals); err != nil {
			return r.fail(ErrSyntax, 0, `process %d: "ret" is not a valid JSON array`, p)
		}
		for _, raw := range vals {
			v, err := r.jsonValue(raw, what)
			if err != nil {
				return err
			}
			res = append(res, v)
		}
	} else {
		// One result may be written alone: "ret":"ok", "ret":5.
		v, err := r.jsonValue(b, what)
		if err != nil {
			return err
		}
		res = append(res, v)
	}
	return r.respond(i, res, false)
}

// errNotWritable is wrapped by WriteV2's errors.
var errNotWritable = errors.New("cannot be written as a version 2 history")

func notWritable(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errNotWritable, fmt.Sprintf(format, args...))
}
