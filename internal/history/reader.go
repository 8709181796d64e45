package history

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// Limits that keep a hostile or broken input from exhausting memory.
const (
	// DefaultMaxLineBytes bounds one line. A 64-word MwCAS with 64-bit hex
	// values takes about 3 KiB; a megabyte leaves room for k in the
	// thousands while refusing a binary file without newlines quickly.
	DefaultMaxLineBytes = 1 << 20
	// DefaultMaxWords bounds k, the number of words of one operation.
	DefaultMaxWords = 4096
	// MaxProc is the largest process id the format allows.
	MaxProc = 1<<31 - 1
)

// Format is the concrete syntax of a history file.
type Format uint8

const (
	// Text is format v1 of docs/history-format.md.
	Text Format = iota + 1
	// JSONL is its JSON Lines twin (one JSON object per line), detected
	// when the first line that is not blank or a comment starts with '{'.
	JSONL
	// Binary is the binary history (package internal/wire), detected by
	// its magic.
	Binary
)

func (f Format) String() string {
	switch f {
	case Text:
		return "text"
	case JSONL:
		return "jsonl"
	case Binary:
		return "binary"
	}
	return "unknown"
}

// Options tune a Reader. The zero value gives the defaults.
type Options struct {
	MaxLineBytes int // default DefaultMaxLineBytes
	MaxWords     int // default DefaultMaxWords
	// Lines, if set, is called with every line that holds no event (the
	// header, init lines, comments, blank lines), its number and its text
	// in the input's syntax, after the Reader took it up (pmlin convert
	// keeps them).
	Lines func(line int64, text []byte)
	// Prefix: a recording cut short (Reader.Cut) ends with io.EOF, as a
	// complete history does, rather than with Cut's error: for a caller
	// that decides the prefix and then reports Cut (pmlin check).
	Prefix bool
}

// procState is what the Reader remembers of one process: whether it has a
// pending operation and, if so, enough of it to validate the response.
type procState struct {
	id      int32
	pending bool
	op      OpKind
	opID    int64
	invLine int64
	addrs   []uint64
	// expected are a pending cas's expected values, given back on its
	// Return (Event.Expected).
	expected []uint64
	// inv is, for a Reader of a Recording read by NextStep, the pending
	// invocation's words in the recording (Step.Inv), which addrs and
	// expected then do not hold; invK is its number of addresses.
	inv  []uint64
	invK int
}

// Reader decodes a history one event at a time, enforcing well-formedness.
// Its memory is one line plus one pending operation per process.
type Reader struct {
	name    string
	br      *bufio.Reader
	in      io.Reader // what br reads (the pipeline reads it directly)
	opts    Options
	line    int64
	format  Format
	started bool // the first event (or EOF) was seen: the header is final
	err     error
	// cur holds the event Next decodes (cur.Event), which NextStep hands
	// over as a Step in place.
	cur Step
	raw []byte // the current line, for the columns of errors
	// addrBuf and expBuf are the Reader's own buffers for the addresses
	// and expected values of an invocation; a Return's Addrs and Expected
	// point at the process's saved copies instead, so an invocation must
	// never append to cur.Addrs or cur.Expected as left by a Return.
	addrBuf  []uint64
	expBuf   []uint64
	noFast   bool // tests: parse every line with the general path
	sniffed  bool // the input's first bytes were looked at
	par      *pipeline
	nums     []uint64 // the numbers a fast path decoded
	scratch  Event    // the JSON fast path decodes through it
	fields   [][]byte
	sawMagic bool
	bin      *binReader // a binary history's decoder

	initDefault    uint64
	initDefaultSet bool
	initWords      map[uint64]uint64

	procIndex map[int32]int32 // process id -> index, for ids >= len(smallProc)
	smallProc []int32         // process id -> index + 1, for small ids (no map on the hot path)
	procs     []procState
	pending   int // number of processes with a pending operation

	events int64
	ops    int64
	crash  int64
	// offset counts the bytes of the lines read (Offset), but by a
	// parallel Reader.
	offset int64

	// A recording that promised its closing line (closing.go): the lines
	// of the promise (with the operations it planned) and of the closing
	// line (an interruption's counts), the line the input ends in the
	// middle of, and whether the end of the input was reached.
	promise, closed   int64
	planned           uint64
	interrupted       bool
	done, stopPlanned uint64
	midLine           int64
	ended             bool
	noEOL             bool // the last line read has no line break: the input ends in it

	// rec, if set, is the Recording read instead of text, from recPos.
	rec    *Recording
	recPos int
	step   Step // NextStep's
	steps  bool // NextStep reads it (Steps)
}

// inMemory returns, for an input held in memory that cannot grow, the
// bytes left to read in it: neither the Reader's buffer nor a chunk of its
// workers needs to be larger. (A bytes.Buffer may still be written to.)
func inMemory(r io.Reader) (n int, ok bool) {
	switch in := r.(type) {
	case *bytes.Reader:
		return in.Len(), true
	case *strings.Reader:
		return in.Len(), true
	}
	return 0, false
}

// NewReader returns a Reader of the history in r. name is used in error
// messages (a file name, or "<stdin>").
func NewReader(r io.Reader, name string, opts Options) *Reader {
	if opts.MaxLineBytes <= 0 {
		opts.MaxLineBytes = DefaultMaxLineBytes
	}
	if opts.MaxWords <= 0 {
		opts.MaxWords = DefaultMaxWords
	}
	// The buffer holds the longest accepted line plus "\r\n", so a line
	// that fills it is too long whatever its ending.
	bufSize := max(opts.MaxLineBytes+2, 16)
	if n, ok := inMemory(r); ok {
		// A history in memory (pmlin fuzz checks one per run): no line is
		// longer than what is left of it, and a buffer of the longest
		// line accepted would be cleared for nothing.
		bufSize = min(bufSize, max(n+1, 16))
	}
	return &Reader{
		name:      name,
		br:        bufio.NewReaderSize(r, bufSize),
		in:        r,
		opts:      opts,
		procIndex: make(map[int32]int32),
		initWords: make(map[uint64]uint64),
	}
}

// Name is the name the Reader uses in errors.
func (r *Reader) Name() string { return r.name }

// Format reports the detected syntax (valid once Next has been called).
func (r *Reader) Format() Format { return r.format }

// InitValue is the initial value of word addr. The header is complete once
// Next has returned its first event (or io.EOF).
func (r *Reader) InitValue(addr uint64) uint64 {
	if v, ok := r.initWords[addr]; ok {
		return v
	}
	return r.initDefault
}

// InitDefault is the initial value of every word not named by an init line.
func (r *Reader) InitDefault() uint64 { return r.initDefault }

// InitWords are the words with an explicit initial value. The map belongs to
// the Reader; do not modify it.
func (r *Reader) InitWords() map[uint64]uint64 { return r.initWords }

// counts reports the events, operations and crashes read so far.
func (r *Reader) counts() (events, ops, crashes int64) { return r.events, r.ops, r.crash }

// processes is the number of distinct process ids seen so far.
func (r *Reader) processes() int { return len(r.procs) }

// lastLine is the number of the last line read.
func (r *Reader) lastLine() int64 { return r.line }

// Offset is how far into its input the Reader is, in bytes: through the
// last line read (a binary history: through the last block read; a
// Recording: 0). With the size of the input it tells the share read, from
// which the analyzer projects what the whole history will need.
func (r *Reader) Offset() int64 {
	switch p := r.par; {
	case r.bin != nil:
		return r.bin.off
	case p != nil && p.cur != nil && p.next > 0 && p.next <= len(p.cur.recs):
		// Worked out here rather than kept up to date per line: the
		// parallel Reader's lines are its hot path.
		return p.bytes + int64(p.cur.recs[p.next-1].end) + 1
	case p != nil:
		return p.bytes
	}
	return r.offset
}

// fail records and returns an *Error of the given kind at the current
// line. tok, if not nil, is the offending token: a subslice of the line,
// whose column the error then names.
func (r *Reader) fail(kind error, tok []byte, format string, args ...any) error {
	r.err = &Error{File: r.name, Line: r.line, Column: r.column(tok), Err: kind, Msg: fmt.Sprintf(format, args...)}
	return r.err
}

// column is the 1-based column of tok in the current raw line, or 0 when
// tok is not part of it (a JSON string's decoded copy). It compares
// addresses, on the error path only.
func (r *Reader) column(tok []byte) int {
	if cap(tok) == 0 {
		return 0
	}
	first := &tok[:1][0]
	for i := range r.raw {
		if &r.raw[i] == first {
			return i + 1
		}
	}
	if n := len(r.raw); n > 0 && n < cap(r.raw) && &r.raw[:n+1][n] == first {
		return n + 1 // an empty token at the end of the line
	}
	return 0
}

// readLine returns the next raw line without its terminator. The slice is
// valid until the next call.
func (r *Reader) readLine() ([]byte, error) {
	line, err := r.br.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		r.line++
		r.raw = nil
		return nil, r.fail(ErrLimit, nil, "line longer than %d bytes (binary data or a missing newline?)", r.opts.MaxLineBytes)
	}
	if err != nil && err != io.EOF {
		r.raw = nil
		return nil, &Error{File: r.name, Line: r.line + 1, Err: err, Msg: "read error: " + err.Error()}
	}
	if len(line) == 0 && err == io.EOF {
		return nil, io.EOF
	}
	r.line++
	r.noEOL = err == io.EOF
	r.offset += int64(len(line))
	if n := len(line); n > 0 && line[n-1] == '\n' {
		line = line[:n-1]
		if n := len(line); n > 0 && line[n-1] == '\r' {
			line = line[:n-1]
		}
	}
	// The limit counts the line's content, not its terminator, with or
	// without one (the last line may lack it).
	r.raw = line
	if len(line) > r.opts.MaxLineBytes {
		return nil, r.fail(ErrLimit, nil, "line longer than %d bytes (binary data or a missing newline?)", r.opts.MaxLineBytes)
	}
	return line, nil
}

// content strips a comment and surrounding blanks; it rejects NUL bytes
// and invalid UTF-8 (the format is UTF-8 text).
func (r *Reader) content(line []byte) ([]byte, error) {
	if i := bytes.IndexByte(line, '#'); i >= 0 {
		comment := line[i:]
		line = line[:i]
		if bytes.IndexByte(comment, 0) >= 0 {
			return nil, r.fail(ErrSyntax, nil, "NUL byte: this is not a text history")
		}
		if !utf8.Valid(comment) {
			return nil, r.fail(ErrSyntax, nil, "comment is not valid UTF-8")
		}
	}
	// Trim by hand: bytes.Trim builds an ASCII set on every call, which
	// showed in profiles at millions of lines per second.
	i, j := 0, len(line)
	for i < j && (line[i] == ' ' || line[i] == '\t') {
		i++
	}
	for j > i && (line[j-1] == ' ' || line[j-1] == '\t') {
		j--
	}
	return line[i:j], nil
}

// Next returns the next event. At the end of a well-formed history it
// returns io.EOF; a malformed one gives an *Error naming the line. After an
// error, every call returns the same error.
func (r *Reader) Next() (*Event, error) {
	if r.rec != nil && r.err == nil {
		return r.nextRecorded() // a Recording (pmlin fuzz): no text, no pipeline
	}
	if r.par != nil && r.sniffed && r.err == nil && r.bin == nil {
		// Most lines of a parallel Reader: one a worker decoded, applied
		// here without next's steps (a tenth of the in-order time).
		if ev, ok, err := r.nextDecoded(); ok {
			if err != nil {
				r.par.halt()
			}
			return ev, err
		}
	}
	ev, err := r.next()
	if err != nil && r.par != nil {
		r.par.halt() // (they are done at the end of the input)
	}
	return ev, err
}

func (r *Reader) next() (*Event, error) {
	if r.err != nil {
		return nil, r.err
	}
	if r.rec != nil {
		return r.nextRecorded()
	}
	if r.bin != nil {
		return r.nextBinary()
	}
	if !r.sniffed {
		r.sniffed = true
		if err := r.sniff(); err != nil {
			return nil, err
		}
		if r.bin != nil {
			// A binary history is decoded by its own reader: no
			// pipeline (Parallel leaves it idle).
			return r.nextBinary()
		}
		if r.par != nil {
			r.par.start()
		}
	}
	for {
		if r.par != nil {
			if ev, ok, err := r.nextDecoded(); ok {
				return ev, err
			}
		}
		var raw []byte
		var rec *chunkRec
		var err error
		if r.par != nil {
			raw, rec, err = r.nextLine()
		} else {
			raw, err = r.readLine()
		}
		if err == io.EOF {
			if r.format == 0 {
				r.format = Text
			}
			return r.end()
		}
		if err != nil {
			r.err = err
			return nil, err
		}
		if r.noEOL && r.promise != 0 && r.closed == 0 {
			// A recording cut in the middle of this line: what is
			// left of it may read as another event (a number cut
			// short), so it is not read.
			r.midLine = r.line
			return r.end()
		}
		if ev, ok, err := r.fast(raw, rec); ok {
			if err != nil {
				return nil, err
			}
			r.events++
			return ev, nil
		}
		line, err := r.content(raw)
		if err != nil {
			return nil, err
		}
		if len(line) == 0 {
			r.nonEvent(raw)
			continue
		}
		if r.format == 0 {
			if line[0] == '{' {
				r.format = JSONL
			} else {
				r.format = Text
			}
		}
		var ev *Event
		if r.format == JSONL {
			ev, err = r.parseJSON(line)
		} else {
			ev, err = r.parseText(line)
		}
		if err != nil {
			return nil, err
		}
		if ev != nil {
			r.events++
			return ev, nil
		}
		r.nonEvent(raw)
	}
}

// nonEvent hands a line that holds no event to Options.Lines.
func (r *Reader) nonEvent(raw []byte) {
	if r.opts.Lines != nil {
		r.opts.Lines(r.line, raw)
	}
}

// fast parses a plain event line straight from the raw line, most lines
// being such (a comment or anything unusual is left to the general path):
// with rec, a parallel Reader's worker decoded it already.
func (r *Reader) fast(raw []byte, rec *chunkRec) (ev *Event, ok bool, err error) {
	if len(raw) == 0 || r.noFast {
		return nil, false, nil
	}
	if rec != nil {
		if rec.kind == fastNone || rec.syn != r.format {
			return nil, false, nil
		}
		return r.applyFast(&rec.fastRec, r.par.cur.nums)
	}
	switch c := raw[0]; {
	case r.format == Text && '0' <= c && c <= '9':
		return r.fastText(raw)
	case r.format == JSONL && c == '{':
		return r.fastJSON(raw)
	}
	return nil, false, nil
}

// proc returns the state of process id, creating it on first appearance.
// (It does not inline: NextStep, which takes every invocation of pmlin
// fuzz's histories, tests smallIndex itself.)
func (r *Reader) proc(id int32) (int32, *procState) {
	if i := r.smallIndex(id); i >= 0 {
		return i, &r.procs[i]
	}
	return r.newProc(id)
}

// smallIndex is the index of process id if the small table has it, else
// -1.
func (r *Reader) smallIndex(id int32) int32 {
	if uint32(id) < uint32(len(r.smallProc)) {
		return r.smallProc[id] - 1
	}
	return -1
}

// newProc is proc of an id the small table does not hold.
func (r *Reader) newProc(id int32) (int32, *procState) {
	idx, ok := r.lookupProc(id)
	if !ok {
		idx = int32(len(r.procs))
		if id < maxSmallProc {
			for int(id) >= len(r.smallProc) {
				r.smallProc = append(r.smallProc, make([]int32, max(64, len(r.smallProc)))...)
			}
			r.smallProc[id] = idx + 1
		} else {
			r.procIndex[id] = idx
		}
		r.procs = append(r.procs, procState{id: id})
	}
	return idx, &r.procs[idx]
}

// maxSmallProc bounds the process ids indexed by a slice instead of a map.
const maxSmallProc = 1 << 16

func (r *Reader) lookupProc(id int32) (int32, bool) {
	if id < maxSmallProc {
		if uint32(id) < uint32(len(r.smallProc)) {
			if i := r.smallProc[id]; i != 0 {
				return i - 1, true
			}
		}
		return 0, false
	}
	idx, ok := r.procIndex[id]
	return idx, ok
}

// header handles the magic line; only the first non-comment line may be one.
func (r *Reader) header(version string) error {
	if r.started || r.sawMagic || len(r.initWords) > 0 || r.initDefaultSet || r.promise != 0 {
		return r.fail(ErrIllFormed, nil, "the pmlin-history header must be the first line that is not blank or a comment")
	}
	if version == "v2" {
		// A version 2 history is read whole into a model.History
		// (ReadV2): pmlin check and pmlin convert tell it by its header
		// (Version); this streaming Reader is version 1's.
		return r.fail(ErrSyntax, nil, "unsupported history version %q here: this is a version 2 history, which pmlin check and pmlin convert read (history.ReadV2 in Go); this reader takes version 1", version)
	}
	if version != "v1" {
		return r.fail(ErrSyntax, nil, "unsupported history version %q (this pmlin reads v1)", version)
	}
	r.sawMagic = true
	return nil
}

func (r *Reader) setInitDefault(v uint64) error {
	if r.started {
		return r.fail(ErrIllFormed, nil, "init after the first event: initial values must come before any operation")
	}
	if r.initDefaultSet {
		return r.fail(ErrIllFormed, nil, "the default initial value is given twice")
	}
	r.initDefault, r.initDefaultSet = v, true
	return nil
}

func (r *Reader) setInitWord(a, v uint64) error {
	if r.started {
		return r.fail(ErrIllFormed, nil, "init after the first event: initial values must come before any operation")
	}
	if _, dup := r.initWords[a]; dup {
		return r.fail(ErrIllFormed, nil, "initial value of address %d is given twice", a)
	}
	r.initWords[a] = v
	return nil
}

// clearEvent empties r.cur.Event for an event being decoded.
func (r *Reader) clearEvent() *Event {
	ev := &r.cur.Event
	ev.Addrs, ev.Expected, ev.New, ev.Values = r.addrBuf[:0], r.expBuf[:0], ev.New[:0], ev.Values[:0]
	ev.OK, ev.FailAddr = false, 0
	return ev
}

// addWord appends one word of the invocation being decoded (r.cur.Event.Op set):
// its address, a cas's expected value and a cas's or a swap's new value
// (toks holds 1, 3 and 2 tokens), each parsed by num, the syntax's number
// parser.
func (r *Reader) addWord(num func(tok []byte, what string) (uint64, error), toks ...[]byte) error {
	ev := &r.cur.Event
	a, err := num(toks[0], "address")
	if err != nil {
		return err
	}
	if ev.Op == CAS {
		e, err := num(toks[1], "expected value")
		if err != nil {
			return err
		}
		ev.Expected = append(ev.Expected, e)
	}
	if ev.Op != Read {
		n, err := num(toks[len(toks)-1], "new value")
		if err != nil {
			return err
		}
		ev.New = append(ev.New, n)
	}
	ev.Addrs = append(ev.Addrs, a)
	return nil
}

// invoke validates and records an invocation already decoded into r.cur.Event.
func (r *Reader) invoke(proc int32) (*Event, error) {
	r.started = true
	ev := &r.cur.Event
	if len(ev.Addrs) == 0 {
		return nil, r.fail(ErrIllFormed, nil, "%s invocation with no address", ev.Op)
	}
	if len(ev.Addrs) > r.opts.MaxWords {
		return nil, r.fail(ErrLimit, nil, "operation on %d words; at most %d are accepted", len(ev.Addrs), r.opts.MaxWords)
	}
	if a, dup := duplicateAddr(ev.Addrs); dup {
		return nil, r.fail(ErrIllFormed, nil, "address %d appears twice in one operation", a)
	}
	idx, ps := r.proc(proc)
	if ps.pending {
		return nil, r.fail(ErrIllFormed, nil, "process %d invokes an operation while its operation of line %d is pending", proc, ps.invLine)
	}
	ev.Interrupted = ev.Interrupted[:0]
	ps.pending, ps.op, ps.opID, ps.invLine = true, ev.Op, r.ops, r.line
	// The buffers just parsed become the process's copies, and the ones
	// it had (its previous operation returned or was cut off) the
	// Reader's: no copy.
	ps.addrs, r.addrBuf = ev.Addrs, ps.addrs[:0]
	if ev.Op == CAS {
		ps.expected, r.expBuf = ev.Expected, ps.expected[:0]
	}
	r.pending++
	ev.Kind, ev.Line, ev.Proc, ev.ProcIndex, ev.InvLine, ev.OpID = Invoke, r.line, proc, idx, r.line, r.ops
	r.ops++
	return ev, nil
}

// pendingFor returns the state of proc for a response, checking there is a
// pending operation to respond to.
func (r *Reader) pendingFor(proc int32) (int32, *procState, error) {
	r.started = true
	idx, ok := r.lookupProc(proc)
	if !ok || !r.procs[idx].pending {
		return 0, nil, r.fail(ErrIllFormed, nil, "process %d returns but has no pending operation", proc)
	}
	return idx, &r.procs[idx], nil
}

// response is what a ret line says, decoded by one of the syntaxes (text,
// JSON Lines, their fast paths) before respond matches it with the
// pending operation. The values of a read, a swap or a failure that
// reports them are in r.cur.Event.Values.
type response struct {
	kind     responseKind
	failAddr uint64
}

type responseKind uint8

const (
	retValues responseKind = iota + 1 // "ret v1 ... vk"
	retOK                             // "ret ok"
	retFail                           // "ret fail a" or "ret fail a v1 ... vk"
)

// respond validates a response against the operation it completes and
// fills the Return event: the one place where the format's rules on
// responses are enforced, whatever the syntax. The syntaxes decode a ret
// line by the kind of the pending operation (ps.op), so a shape of the
// wrong kind does not reach here.
func (r *Reader) respond(idx int32, ps *procState, resp response) (*Event, error) {
	r.started = true
	ev := &r.cur.Event
	switch {
	case ps.op != CAS && resp.kind == retValues:
		if len(ev.Values) != len(ps.addrs) {
			return nil, r.fail(ErrIllFormed, nil, "process %d: the %s of line %d has %d addresses but returns %d values", ps.id, ps.op, ps.invLine, len(ps.addrs), len(ev.Values))
		}
		ev.OK = ps.op == Swap
	case ps.op == CAS && resp.kind == retOK:
		ev.OK = true
	case ps.op == CAS && resp.kind == retFail:
		if !contains(ps.addrs, resp.failAddr) {
			return nil, r.fail(ErrIllFormed, nil, "process %d: the cas of line %d fails at address %d, which is not one of its addresses", ps.id, ps.invLine, resp.failAddr)
		}
		if n := len(ev.Values); n != 0 && n != len(ps.addrs) {
			return nil, r.fail(ErrIllFormed, nil, "process %d: the cas of line %d has %d addresses but its failure reports %d values (one per address, or none)", ps.id, ps.invLine, len(ps.addrs), n)
		}
		ev.FailAddr = resp.failAddr
	default:
		panic(fmt.Sprintf("history: a %v decoded as response %d", ps.op, resp.kind))
	}
	ev.Kind, ev.Line, ev.Proc, ev.ProcIndex = Return, r.line, ps.id, idx
	ev.Op, ev.InvLine, ev.OpID, ev.Addrs = ps.op, ps.invLine, ps.opID, ps.addrs
	ev.Expected, ev.New, ev.Interrupted = ev.Expected[:0], ev.New[:0], ev.Interrupted[:0]
	if ps.op == CAS {
		ev.Expected = ps.expected // (and never appended to: clearEvent comes first)
	}
	ps.pending = false
	r.pending--
	return ev, nil
}

// crashEvent interrupts every pending operation.
func (r *Reader) crashEvent() *Event {
	r.started = true
	interrupted := r.cur.Event.Interrupted[:0]
	if r.pending > 0 {
		for i := range r.procs {
			if ps := &r.procs[i]; ps.pending {
				ps.pending = false
				interrupted = append(interrupted, ps.opID)
			}
		}
		r.pending = 0
	}
	r.crash++
	r.cur.Event = Event{Kind: Crash, Line: r.line, Proc: -1, ProcIndex: -1, OpID: -1, Interrupted: interrupted,
		Addrs: r.addrBuf[:0], Expected: r.expBuf[:0], New: r.cur.Event.New[:0], Values: r.cur.Event.Values[:0]}
	return &r.cur.Event
}

// duplicateAddr reports a repeated address. Small k is the common case, so
// it compares every pair there (no allocation) and uses a set only for
// k above 32.
func duplicateAddr(addrs []uint64) (uint64, bool) {
	if len(addrs) <= 32 {
		for i := 1; i < len(addrs); i++ {
			for j := 0; j < i; j++ {
				if addrs[i] == addrs[j] {
					return addrs[i], true
				}
			}
		}
		return 0, false
	}
	seen := make(map[uint64]struct{}, len(addrs))
	for _, a := range addrs {
		if _, ok := seen[a]; ok {
			return a, true
		}
		seen[a] = struct{}{}
	}
	return 0, false
}

// duplicateWord is duplicateAddr of the k addresses words[0],
// words[stride], words[2*stride], ... (a Recording keeps an invocation's
// addresses interleaved with its values, see NextStep), gathered first.
func duplicateWord(words []uint64, stride, k int) (uint64, bool) {
	var buf [32]uint64
	addrs := buf[:0]
	if k > len(buf) {
		addrs = make([]uint64, 0, k)
	}
	for i := range k {
		addrs = append(addrs, words[i*stride])
	}
	return duplicateAddr(addrs)
}

// errNumber explains why a token is not a number.
var errNumber = errors.New("not a number")
