package history

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/pmlin/pmlin/internal/wire"
	"github.com/pmlin/pmlin/model"
)

// Version 2 of the format (docs/history-format.md, "Version 2"): objects of
// any data type. Its histories are read whole into a model.History, the one
// in-memory form the generic checker takes; version 1 files keep their
// streaming Reader, which this file does not touch.

// wordsModel is the model of version 1's word array, and the name of the
// object a version 1 line of a version 2 file acts on.
const wordsModel = "words"

// v2Header is the first line of a version 2 history.
const v2Header = "pmlin-history v2"

// Version tells the version of the history br holds, 1 or 2, from its
// first line that is not blank or a comment (text or JSON Lines), without
// consuming anything: 2 if that line is the version 2 header, 1 for
// anything else (a version 1 history, input that is no history at all,
// which the version 1 Reader then names). A binary history is version 2
// if its first text records that are not blank or a comment are the
// version 2 header. It looks at most at br's buffer.
func Version(br *bufio.Reader) int {
	head, _ := br.Peek(br.Size())
	if isBinaryV2(head) {
		return 2
	}
	for len(head) > 0 {
		line := head
		if i := bytes.IndexByte(head, '\n'); i >= 0 {
			line, head = head[:i], head[i+1:]
		} else {
			head = nil
		}
		if i := bytes.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		line = bytes.Trim(line, " \t\r")
		if len(line) == 0 {
			continue
		}
		if line[0] == '{' {
			var j struct {
				Header string `json:"header"`
			}
			if json.Unmarshal(line, &j) == nil && j.Header == v2Header {
				return 2
			}
			return 1
		}
		if f := strings.Fields(string(line)); len(f) == 2 && f[0] == "pmlin-history" && f[1] == "v2" {
			return 2
		}
		return 1
	}
	return 1
}

// ReadV2 reads a whole version 2 history, text or JSON Lines (told by its
// first line that is not blank or a comment), into memory. name is used in
// errors and becomes the History's Name. The first violation of the format
// stops the reading with an *Error naming the line (and, in text, the
// column of the token to blame). Operations still pending at the end are
// cut off by it.
func ReadV2(in io.Reader, name string) (*model.History, error) {
	return newV2Reader(name).read(in)
}

func newV2Reader(name string) *v2Reader {
	return &v2Reader{name: name, h: &model.History{Name: name}, objects: map[string]int{},
		procs: map[int64]*v2Proc{}, implicit: -1}
}

// read reads the history in, line by line.
func (r *v2Reader) read(in io.Reader) (*model.History, error) {
	size := DefaultMaxLineBytes + 2
	if n, ok := inMemory(in); ok {
		size = min(size, max(n+1, 16)) // no line is longer than the input
	}
	br := bufio.NewReaderSize(in, size)
	if head, _ := br.Peek(len(wire.Magic)); string(head) == wire.Magic {
		return r.readBinary(br) // v2bin.go
	}
	for {
		raw, err := br.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			r.line++
			return nil, r.fail(ErrLimit, 0, "line longer than %d bytes (binary data or a missing newline?)", DefaultMaxLineBytes)
		}
		if err != nil && err != io.EOF {
			return nil, &Error{File: r.name, Line: r.line + 1, Err: err, Msg: "read error: " + err.Error()}
		}
		if len(raw) == 0 && err == io.EOF {
			break
		}
		r.line++
		raw = bytes.TrimSuffix(raw, []byte("\n"))
		raw = bytes.TrimSuffix(raw, []byte("\r"))
		if len(raw) > DefaultMaxLineBytes {
			return nil, r.fail(ErrLimit, 0, "line longer than %d bytes (binary data or a missing newline?)", DefaultMaxLineBytes)
		}
		if lerr := r.readLine(string(raw)); lerr != nil {
			return nil, lerr
		}
		if err == io.EOF {
			break
		}
	}
	return r.end()
}

// v2Reader is ReadV2's state.
type v2Reader struct {
	name   string
	line   int64
	syntax Format // Text or JSONL, from the header line; 0 before it
	h      *model.History
	// objects maps a declared object's name to its index in h.Objects.
	objects map[string]int
	// implicit is the index of the object "words" when a version 1 line
	// brought it in without a declaration, -1 otherwise; implicitLine is
	// that line.
	implicit     int
	implicitLine int64
	procs        map[int64]*v2Proc
	started      bool // an event was read: init lines are over
	sawHeader    bool
	binary       bool // the input is a binary history (v2bin.go)
	headerLine   int64

	// keep, for ConvertV2, has the lines that hold no event and no
	// declaration kept: comments and blank lines as they are (in
	// comments), init lines as the parameters each added (in inits).
	keep     bool
	raws     map[int64]string // (text lines only)
	comments map[int64]string
	inits    map[int64][]model.Param
}

// v2Proc is what the reader keeps of a process.
type v2Proc struct {
	pending int // its operation without a response (index in h.Ops), or -1
	// cut is its last operation cut off by a crash (index in h.Ops), or
	// -1, for the message of a response that comes after the crash.
	cut int
}

// fail returns an *Error at the current line; col is the 1-based column
// of the token to blame, 0 for none.
func (r *v2Reader) fail(kind error, col int, format string, args ...any) error {
	return &Error{File: r.name, Line: r.line, Column: col, Err: kind, Msg: fmt.Sprintf(format, args...)}
}

// tok is a token of a text line and its 1-based column.
type tok struct {
	s   string
	col int
}

// readLine reads one line, without its line ending.
func (r *v2Reader) readLine(raw string) error {
	if r.keep && r.syntax != JSONL && !strings.HasPrefix(strings.TrimLeft(raw, " \t"), "{") {
		r.raws[r.line] = raw // a text line, kept as it is for a binary history's text record (v2bin.go)
	}
	code := raw
	if i := strings.IndexByte(raw, '#'); i >= 0 {
		code = raw[:i]
		if strings.IndexByte(raw[i:], 0) >= 0 {
			return r.fail(ErrSyntax, 0, "NUL byte: this is not a text history")
		}
		if !utf8.ValidString(raw[i:]) {
			return r.fail(ErrSyntax, 0, "comment is not valid UTF-8")
		}
	}
	code = strings.TrimRight(code, " \t")
	trimmed := strings.TrimLeft(code, " \t")
	if trimmed == "" {
		if r.keep {
			if r.comments == nil {
				r.comments = map[int64]string{}
			}
			r.comments[r.line] = strings.TrimLeft(raw, " \t")
		}
		return nil
	}
	if r.syntax == 0 {
		if trimmed[0] == '{' {
			r.syntax = JSONL
		} else {
			r.syntax = Text
		}
	}
	if r.syntax == JSONL {
		return r.jsonLine(trimmed)
	}
	var f []tok
	start := -1
	for i := 0; i <= len(code); i++ {
		if i == len(code) || code[i] == ' ' || code[i] == '\t' {
			if start >= 0 {
				f = append(f, tok{code[start:i], start + 1})
				start = -1
			}
			continue
		}
		if c := code[i]; c < 0x21 || c > 0x7e {
			if c == 0 {
				return r.fail(ErrSyntax, 0, "NUL byte: this is not a text history")
			}
			return r.fail(ErrSyntax, i+1, "unexpected character %q", rune(c))
		}
		if start < 0 {
			start = i
		}
	}
	return r.textLine(f)
}

// headerVersion checks the version a header line names: "v2", or an
// error for any other.
func (r *v2Reader) headerVersion(version string, col int) error {
	switch version {
	case "v2":
		r.sawHeader, r.headerLine = true, r.line
		return nil
	case "v1":
		return r.fail(ErrSyntax, col, "this is a version 1 history (its header is %q), not version 2", "pmlin-history v1")
	}
	return r.fail(ErrSyntax, col, "unsupported history version %q (this pmlin reads v1 and v2)", clipString(version))
}

// noHeader is the error of a first line that is not the header.
func (r *v2Reader) noHeader() error {
	return r.fail(ErrSyntax, 0, "a version 2 history starts with the line %q (the first line that is not blank or a comment)", v2Header)
}

// end finishes the history: what is pending is cut off by the end.
func (r *v2Reader) end() (*model.History, error) {
	if r.syntax == 0 {
		line := r.line
		if line > 1 {
			line = 1
		}
		return nil, &Error{File: r.name, Line: line, Err: ErrSyntax,
			Msg: fmt.Sprintf("no header: a version 2 history starts with the line %q", v2Header)}
	}
	return r.h, nil
}

// validName is the grammar of object, model and operation names:
// [a-z][a-z0-9_-]*.
func validName(s string) bool {
	if s == "" || s[0] < 'a' || s[0] > 'z' {
		return false
	}
	for i := 1; i < len(s); i++ {
		if c := s[i]; !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// isWordsOp tells the operations of version 1, whose names an object may
// not take: a version 1 line names its operation where a version 2 line
// names its object.
func isWordsOp(s string) bool { return s == "read" || s == "cas" || s == "swap" }

// reservedName tells the names an object may not take.
func reservedName(s string) bool { return isWordsOp(s) || s == "crash" }

// validParam is the grammar of a parameter: key [a-z0-9][a-z0-9_.-]*, and
// a value of printable ASCII without spaces or '#', so that every
// parameter can be written in text.
func validParam(p model.Param) string {
	k := p.Key
	if k == "" || !('a' <= k[0] && k[0] <= 'z' || '0' <= k[0] && k[0] <= '9') {
		return "a parameter's name starts with a lower-case letter or a digit"
	}
	for i := 1; i < len(k); i++ {
		if c := k[i]; !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '_' || c == '.' || c == '-') {
			return fmt.Sprintf("parameter name %q has %q: a name holds lower-case letters, digits, '_', '.' and '-'", k, rune(c))
		}
	}
	if p.Value == "" {
		return fmt.Sprintf("parameter %s has no value (%s=VALUE)", k, k)
	}
	for i := 0; i < len(p.Value); i++ {
		if c := p.Value[i]; c < 0x21 || c > 0x7e || c == '#' {
			return fmt.Sprintf("the value of parameter %s has %q: a value is printable ASCII without spaces or '#'", k, rune(c))
		}
	}
	return ""
}

// declare declares an object, at the current line; nameCol and modelCol
// are columns for errors (0 in JSON Lines).
func (r *v2Reader) declare(name string, nameCol int, modelName string, modelCol int, params []model.Param) error {
	switch {
	case !validName(name):
		return r.fail(ErrSyntax, nameCol, "object name %q is not a name ([a-z][a-z0-9_-]*)", clipString(name))
	case reservedName(name):
		return r.fail(ErrIllFormed, nameCol, "%q cannot name an object: read, cas, swap and crash are reserved", name)
	case !validName(modelName):
		return r.fail(ErrSyntax, modelCol, "model name %q is not a name ([a-z][a-z0-9_-]*)", clipString(modelName))
	}
	if i, dup := r.objects[name]; dup {
		if i == r.implicit {
			return r.fail(ErrIllFormed, nameCol, "object %s is declared after the version 1 line of line %d acted on it (as the object words of model words): declare it before", name, r.implicitLine)
		}
		return r.fail(ErrIllFormed, nameCol, "object %s is declared twice (first at line %d)", name, r.h.Objects[i].Line)
	}
	seen := map[string]bool{}
	for _, p := range params {
		if msg := validParam(p); msg != "" {
			return r.fail(ErrSyntax, 0, "object %s: %s", name, msg)
		}
		if seen[p.Key] {
			return r.fail(ErrIllFormed, 0, "object %s: parameter %s is given twice", name, p.Key)
		}
		seen[p.Key] = true
	}
	if modelName == wordsModel {
		// The reader reads a words object's operations itself, and so
		// its parameters: what they mean is the model's to say.
		if _, err := model.Builtin(wordsModel)(params); err != nil {
			return r.fail(ErrIllFormed, 0, "object %s: %v", name, err)
		}
	}
	r.objects[name] = len(r.h.Objects)
	r.h.Objects = append(r.h.Objects, model.Object{Name: name, Model: modelName, Params: params, Line: r.line})
	return nil
}

// wordsObject is the object a version 1 line acts on: the object words,
// declared or brought in by this line.
func (r *v2Reader) wordsObject() (int, error) {
	if i, ok := r.objects[wordsModel]; ok {
		if m := r.h.Objects[i].Model; m != wordsModel {
			return 0, r.fail(ErrIllFormed, 0, "a version 1 line acts on the object words of model words, but words is a %s here (line %d)", m, r.h.Objects[i].Line)
		}
		return i, nil
	}
	r.implicit, r.implicitLine = len(r.h.Objects), r.line
	r.objects[wordsModel] = r.implicit
	r.h.Objects = append(r.h.Objects, model.Object{Name: wordsModel, Model: wordsModel})
	return r.implicit, nil
}

// addInit adds version 1's initial values (init lines) to the object
// words: def says whether a is the default (init V) or an address (init
// A=V).
func (r *v2Reader) addInit(def bool, a, v uint64) error {
	if r.started {
		return r.fail(ErrIllFormed, 0, "init after the first event: initial values must come before any operation")
	}
	i, err := r.wordsObject()
	if err != nil {
		return err
	}
	p := model.Param{Key: "init", Value: model.Number(v).String()}
	if !def {
		p.Key = strconv.FormatUint(a, 10)
	}
	o := &r.h.Objects[i]
	params := append(o.Params[:len(o.Params):len(o.Params)], p)
	if _, err := model.Builtin(wordsModel)(params); err != nil {
		return r.fail(ErrIllFormed, 0, "%v", err)
	}
	o.Params = params
	if r.keep {
		if r.inits == nil {
			r.inits = map[int64][]model.Param{}
		}
		r.inits[r.line] = append(r.inits[r.line], p)
	}
	return nil
}

// proc is the state of process p.
func (r *v2Reader) proc(p int64) *v2Proc {
	ps := r.procs[p]
	if ps == nil {
		ps = &v2Proc{pending: -1, cut: -1}
		r.procs[p] = ps
	}
	return ps
}

// object is the declared object named by an invocation.
func (r *v2Reader) object(name string, col int) (int, error) {
	i, ok := r.objects[name]
	if !ok {
		if !validName(name) {
			return 0, r.fail(ErrSyntax, col, "%q is not an object's name, nor read, cas or swap", clipString(name))
		}
		return 0, r.fail(ErrIllFormed, col, "object %s is not declared (\"object %s <model>\" must come before its first operation)", name, name)
	}
	return i, nil
}

// invoke checks and records an invocation of operation name on object obj
// with its arguments (a words operation's flattened as docs/history-format.md
// says).
func (r *v2Reader) invoke(p int64, obj int, name string, args []model.Value) error {
	r.started = true
	ps := r.proc(p)
	if ps.pending >= 0 {
		return r.fail(ErrIllFormed, 0, "process %d invokes an operation while its operation of line %d is pending", p, r.h.Ops[ps.pending].Line)
	}
	if r.h.Objects[obj].Model == wordsModel {
		if err := r.checkWordsArgs(name, args); err != nil {
			return err
		}
	}
	if len(args) == 0 {
		args = nil
	}
	ps.pending, ps.cut = len(r.h.Ops), -1
	r.h.Ops = append(r.h.Ops, model.Op{Proc: p, Object: obj, Name: name, Args: args, Status: model.CutOff,
		Call: r.h.Events, Return: -1, Crash: -1, Line: r.line})
	r.h.Events++
	return nil
}

// pendingOp is the operation process p's response answers.
func (r *v2Reader) pendingOp(p int64) (int, error) {
	r.started = true
	ps := r.procs[p]
	switch {
	case ps != nil && ps.pending >= 0:
		return ps.pending, nil
	case ps != nil && ps.cut >= 0:
		op := &r.h.Ops[ps.cut]
		return 0, r.fail(ErrIllFormed, 0, "process %d returns but has no pending operation: its operation of line %d was cut off by the crash of line %d", p, op.Line, r.h.Crashes[op.Crash].Line)
	}
	return 0, r.fail(ErrIllFormed, 0, "process %d returns but has no pending operation", p)
}

// respond checks and records the response of operation i: its results,
// or unknown ("?").
func (r *v2Reader) respond(i int, results []model.Value, unknown bool) error {
	op := &r.h.Ops[i]
	switch {
	case unknown:
		op.Status, results = model.Unknown, nil
	case len(results) == 0:
		return r.fail(ErrSyntax, 0, "process %d: a response has its results, or ? (unknown)", op.Proc)
	case r.h.Objects[op.Object].Model == wordsModel:
		if err := r.checkWordsResults(op, results); err != nil {
			return err
		}
		op.Status = model.Returned
	default:
		op.Status = model.Returned
	}
	op.Results, op.Return, op.RetLine = results, r.h.Events, r.line
	r.procs[op.Proc].pending = -1
	r.h.Events++
	return nil
}

// crash cuts off every pending operation.
func (r *v2Reader) crash() {
	r.started = true
	c := len(r.h.Crashes)
	r.h.Crashes = append(r.h.Crashes, model.Crash{Pos: r.h.Events, Line: r.line})
	for _, ps := range r.procs {
		if ps.pending >= 0 {
			r.h.Ops[ps.pending].Crash = c
			ps.cut, ps.pending = ps.pending, -1
		}
	}
	r.h.Events++
}

// wordsStride is how many arguments a words operation takes per word.
func wordsStride(name string) int {
	switch name {
	case "cas":
		return 3
	case "swap":
		return 2
	}
	return 1
}

// wordsParts name the numbers of one word of a words operation, by
// stride.
var wordsParts = [...][]string{1: {"address"}, 2: {"address", "new value"}, 3: {"address", "expected value", "new value"}}

// checkWordsArgs holds a words operation to version 1's rules.
func (r *v2Reader) checkWordsArgs(name string, args []model.Value) error {
	stride := wordsStride(name)
	k := len(args) / stride
	switch {
	case k == 0:
		return r.fail(ErrIllFormed, 0, "%s invocation with no address", name)
	case k > DefaultMaxWords:
		return r.fail(ErrLimit, 0, "operation on %d words; at most %d are accepted", k, DefaultMaxWords)
	}
	addrs := make([]uint64, k)
	for j := range addrs {
		addrs[j] = args[j*stride].N
	}
	if a, dup := duplicateAddr(addrs); dup {
		return r.fail(ErrIllFormed, 0, "address %d appears twice in one operation", a)
	}
	return nil
}

// checkWordsResults holds a words operation's response to version 1's
// rules.
func (r *v2Reader) checkWordsResults(op *model.Op, res []model.Value) error {
	stride := wordsStride(op.Name)
	k := len(op.Args) / stride
	if op.Name != "cas" {
		for _, v := range res {
			if v.Sym != model.Num {
				return r.fail(ErrIllFormed, 0, "process %d: the %s of line %d returns values (numbers), not %q", op.Proc, op.Name, op.Line, v)
			}
		}
		if len(res) != k {
			return r.fail(ErrIllFormed, 0, "process %d: the %s of line %d has %d addresses but returns %d values", op.Proc, op.Name, op.Line, k, len(res))
		}
		return nil
	}
	shape := len(res) == 1 && res[0] == model.Sym(model.OK) || len(res) >= 2 && res[0] == model.Sym(model.Fail)
	for _, v := range res[min(len(res), 1):] {
		shape = shape && v.Sym == model.Num
	}
	if !shape {
		return r.fail(ErrIllFormed, 0, "process %d: the cas of line %d must return %q, %q or %q", op.Proc, op.Line, "ok", "fail <address>", "fail <address> <v1> ... <vk>")
	}
	if len(res) == 1 {
		return nil
	}
	a := res[1].N
	found := false
	for j := 0; j < len(op.Args); j += stride {
		found = found || op.Args[j].N == a
	}
	if !found {
		return r.fail(ErrIllFormed, 0, "process %d: the cas of line %d fails at address %d, which is not one of its addresses", op.Proc, op.Line, a)
	}
	if n := len(res) - 2; n != 0 && n != k {
		return r.fail(ErrIllFormed, 0, "process %d: the cas of line %d has %d addresses but its failure reports %d values (one per address, or none)", op.Proc, op.Line, k, n)
	}
	return nil
}

// clipString shortens a token quoted in an error message.
func clipString(s string) string { return clip([]byte(s)) }

// The text syntax.

func (r *v2Reader) textLine(f []tok) error {
	if !r.sawHeader {
		if len(f) != 2 || f[0].s != "pmlin-history" {
			return r.noHeader()
		}
		return r.headerVersion(f[1].s, f[1].col)
	}
	switch f[0].s {
	case "pmlin-history":
		return r.fail(ErrIllFormed, f[0].col, "the pmlin-history header must be the first line that is not blank or a comment")
	case "crash":
		if len(f) != 1 {
			return r.fail(ErrSyntax, f[1].col, "a crash line has nothing after %q", "crash")
		}
		r.crash()
		return nil
	case "object":
		if len(f) < 3 {
			return r.fail(ErrSyntax, 0, "an object is declared as %q", "object <name> <model> [<param>=<value> ...]")
		}
		var params []model.Param
		for _, t := range f[3:] {
			k, v, ok := strings.Cut(t.s, "=")
			if !ok {
				return r.fail(ErrSyntax, t.col, "parameter %q is not <param>=<value>", clipString(t.s))
			}
			params = append(params, model.Param{Key: k, Value: v})
		}
		return r.declare(f[1].s, f[1].col, f[2].s, f[2].col, params)
	case "init":
		return r.textInit(f[1:])
	case "recording", "end", "interrupted":
		return r.fail(ErrSyntax, f[0].col, "%q: a recording that says whether it is complete is version 1 only", f[0].s)
	}
	if c := f[0].s[0]; c < '0' || c > '9' {
		return r.fail(ErrSyntax, f[0].col, "unknown directive %q (expected a process id, object, init, crash)", clipString(f[0].s))
	}
	p, err := r.procID(f[0])
	if err != nil {
		return err
	}
	if len(f) < 2 {
		return r.fail(ErrSyntax, 0, "process %d: expected inv or ret", p)
	}
	switch f[1].s {
	case "inv":
		return r.textInv(p, f[2:])
	case "ret":
		return r.textRet(p, f[2:])
	}
	return r.fail(ErrSyntax, f[1].col, "process %d: expected inv or ret, found %q", p, clipString(f[1].s))
}

// procID parses a process id: decimal, 0 to MaxProc.
func (r *v2Reader) procID(t tok) (int64, error) {
	v, err := strconv.ParseUint(t.s, 10, 64)
	if err != nil && err.(*strconv.NumError).Err == strconv.ErrRange {
		err, v = nil, MaxProc+1
	}
	switch {
	case err != nil || strings.HasPrefix(t.s, "+"):
		return 0, r.fail(ErrSyntax, t.col, "process id %q is not a decimal integer from 0 to %d", clipString(t.s), MaxProc)
	case v > MaxProc:
		return 0, r.fail(ErrSyntax, t.col, "process id %s is larger than %d", clipString(t.s), MaxProc)
	}
	return int64(v), nil
}

// number parses a text token (or a JSON string's contents, col 0) as an
// unsigned 64-bit number, naming what it is on error.
func (r *v2Reader) number(s string, col int, what string) (uint64, error) {
	v, err := parseU64([]byte(s))
	switch {
	case err == nil:
		return v, nil
	case strings.HasPrefix(s, "-"):
		hint := ""
		if n, err := strconv.ParseInt(s, 10, 64); err == nil {
			hint = fmt.Sprintf(" (a signed value? write its 64-bit two's complement, %#x)", uint64(n))
		}
		return 0, r.fail(ErrSyntax, col, "%s %q is negative: values are unsigned 64-bit numbers%s", what, clipString(s), hint)
	case err == strconv.ErrRange:
		return 0, r.fail(ErrSyntax, col, "%s %q does not fit in 64 bits", what, clipString(s))
	}
	return 0, r.fail(ErrSyntax, col, "%s %q is not a number (decimal or 0x hex)", what, clipString(s))
}

// value parses an argument or a result: a number or a symbol.
func (r *v2Reader) value(s string, col int, what string) (model.Value, error) {
	if s != "" && (s[0] == '-' || '0' <= s[0] && s[0] <= '9') {
		n, err := r.number(s, col, what)
		return model.Number(n), err
	}
	if v, err := model.ParseValue(s); err == nil {
		return v, nil
	}
	return model.Value{}, r.fail(ErrSyntax, col, "%s %q is not a value (a number, decimal or 0x hex, or nil, ok, fail, empty, true, false)", what, clipString(s))
}

func (r *v2Reader) textInit(args []tok) error {
	if len(args) == 0 {
		return r.fail(ErrSyntax, 0, "init needs a value or address=value pairs")
	}
	if len(args) == 1 && !strings.Contains(args[0].s, "=") {
		v, err := r.number(args[0].s, args[0].col, "initial value")
		if err != nil {
			return err
		}
		return r.addInit(true, 0, v)
	}
	for _, t := range args {
		as, vs, ok := strings.Cut(t.s, "=")
		if !ok {
			return r.fail(ErrSyntax, t.col, "init pair %q is not address=value", clipString(t.s))
		}
		a, err := r.number(as, t.col, "address")
		if err != nil {
			return err
		}
		v, err := r.number(vs, t.col+len(as)+1, "initial value")
		if err != nil {
			return err
		}
		if err := r.addInit(false, a, v); err != nil {
			return err
		}
	}
	return nil
}

func (r *v2Reader) textInv(p int64, f []tok) error {
	if len(f) == 0 {
		return r.fail(ErrSyntax, 0, "process %d: inv needs an object and its operation (or read, cas or swap)", p)
	}
	var obj int
	var err error
	op, args := f[0], f[1:]
	if isWordsOp(f[0].s) {
		obj, err = r.wordsObject()
	} else {
		obj, err = r.object(f[0].s, f[0].col)
		if err == nil && len(f) < 2 {
			return r.fail(ErrSyntax, 0, "process %d: inv %s needs an operation", p, f[0].s)
		}
		op, args = f[min(1, len(f)-1)], f[min(2, len(f)):]
	}
	if err != nil {
		return err
	}
	var vals []model.Value
	if r.h.Objects[obj].Model == wordsModel {
		if !isWordsOp(op.s) {
			return r.fail(ErrIllFormed, op.col, "process %d: object %s is of model words: its operations are read, cas and swap, not %q", p, r.h.Objects[obj].Name, clipString(op.s))
		}
		stride := wordsStride(op.s)
		for _, t := range args {
			parts := strings.Split(t.s, ":")
			if len(parts) != stride {
				return r.fail(ErrSyntax, t.col, "%s word %q is not %s", op.s, clipString(t.s), [...]string{1: "an address", 2: "address:new", 3: "address:expected:new"}[stride])
			}
			col := t.col
			for j, s := range parts {
				n, err := r.number(s, col, wordsParts[stride][j])
				if err != nil {
					return err
				}
				vals = append(vals, model.Number(n))
				col += len(s) + 1
			}
		}
	} else {
		if !validName(op.s) {
			return r.fail(ErrSyntax, op.col, "process %d: operation name %q is not a name ([a-z][a-z0-9_-]*)", p, clipString(op.s))
		}
		for _, t := range args {
			v, err := r.value(t.s, t.col, "argument")
			if err != nil {
				return err
			}
			vals = append(vals, v)
		}
	}
	return r.invoke(p, obj, op.s, vals)
}

func (r *v2Reader) textRet(p int64, f []tok) error {
	i, err := r.pendingOp(p)
	if err != nil {
		return err
	}
	if len(f) > 0 && f[0].s == "?" {
		if len(f) > 1 {
			return r.fail(ErrSyntax, f[1].col, "process %d: an unknown response is \"ret ?\" alone", p)
		}
		return r.respond(i, nil, true)
	}
	what := "result"
	if r.h.Objects[r.h.Ops[i].Object].Model == wordsModel {
		what = "returned value"
	}
	var res []model.Value
	for _, t := range f {
		v, err := r.value(t.s, t.col, what)
		if err != nil {
			return err
		}
		res = append(res, v)
	}
	return r.respond(i, res, false)
}
