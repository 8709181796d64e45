package merge

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/pmlin/pmlin/internal/history"
)

// step is one timestamped line of a log: an event of a process, a crash,
// or a comment (gathered logs only).
type step struct {
	ts   uint64
	text string // the event, fields joined by one space: "<p> inv ...", "crash", "# ..."
	line int64  // the line, or in a binary log the byte offset of the record (-1: none)
	file int32
	proc int32 // -1: a crash or a comment
	ret  bool
	note bool // a comment
}

// initValue is an initial value and where it was given.
type initValue struct {
	v    uint64
	file int32
	line int64
}

// procInfo is what the reader remembers of a process: where it lives and
// its last timestamp.
type procInfo struct {
	file     int32
	lastTS   uint64
	lastLine int64
	steps    []int32 // indexes in Merged.steps, in log order
}

// parser reads logs into a Merged.
type parser struct {
	m     *Merged
	procs map[int32]*procInfo
}

func (p *parser) errorf(file int32, line int64, format string, args ...any) error {
	return p.m.errorAt(file, line, fmt.Sprintf(format, args...))
}

func (p *parser) where(file int32, line int64) string { return p.m.where(file, line) }

// errorAt is an error at a line of a text log ("FILE:LINE: msg"), or at a
// record of a binary log ("FILE: byte offset N: msg").
func (m *Merged) errorAt(file int32, line int64, msg string) error {
	switch {
	case !m.binary(file):
		return &history.Error{File: m.names[file], Line: line, Msg: msg}
	case line >= 0:
		return &history.Error{File: m.names[file], Msg: fmt.Sprintf("byte offset %d: %s", line, msg)}
	}
	return &history.Error{File: m.names[file], Msg: msg}
}

// where names a line of a text log ("FILE:LINE"), or a record of a binary
// log ("FILE, byte offset N").
func (m *Merged) where(file int32, line int64) string {
	switch {
	case !m.binary(file):
		return fmt.Sprintf("%s:%d", m.names[file], line)
	case line >= 0:
		return fmt.Sprintf("%s, byte offset %d", m.names[file], line)
	}
	return m.names[file]
}

// at names a step of a process in a message about another step of that
// process: "line N" (a process's steps are in one text log), or where it
// is in a binary log (they span a generation's file each).
func (m *Merged) at(file int32, line int64) string {
	if m.binary(file) {
		return m.where(file, line)
	}
	return fmt.Sprintf("line %d", line)
}

func (m *Merged) binary(file int32) bool { return int(file) < len(m.bin) && m.bin[file] }

// read parses one log.
func (p *parser) read(file int32, r io.Reader) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), history.DefaultMaxLineBytes)
	var line int64
	var f []string   // the line's fields, reused
	started := false // a header, init or step was seen
	stepped := false // a step was seen
	shaped := false  // a header or a step with a process id was seen: this is a log
	for sc.Scan() {
		line++
		raw := sc.Bytes()
		if line == 1 {
			raw = bytes.TrimPrefix(raw, []byte("\uFEFF")) // a byte order mark says nothing
		}
		if bytes.IndexByte(raw, 0) >= 0 || !utf8.Valid(raw) {
			return p.errorf(file, line, "not text (a NUL byte or invalid UTF-8): a log is text lines `<timestamp> <event>`")
		}
		if i := bytes.IndexByte(raw, '#'); i >= 0 {
			raw = raw[:i]
		}
		text := string(raw)
		f = fields(text, f[:0])
		if len(f) == 0 {
			continue
		}
		switch f[0] {
		case "pmlin-log":
			if started {
				return p.errorf(file, line, "the pmlin-log header must be the first line that is not blank or a comment")
			}
			if len(f) != 2 || f[1] != "v1" {
				return p.errorf(file, line, "unsupported log header %q (this pmlin reads %q)", strings.Join(f, " "), "pmlin-log v1")
			}
			started, shaped = true, true
			continue
		case "pmlin-history":
			return p.errorf(file, line, "this is a history, not a log with timestamps: `pmlin check` it directly (pmlin merge reads lines `<timestamp> <event>`)")
		case "init":
			if stepped {
				return p.errorf(file, line, "init after the first event of this log: initial values come first")
			}
			started = true
			if err := p.init(file, line, f); err != nil {
				return err
			}
			continue
		}
		started, stepped = true, true
		if err := p.step(file, line, text, f, shaped); err != nil {
			return err
		}
		shaped = true
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return p.errorf(file, line+1, "line longer than %d bytes (binary data or a missing newline?)", history.DefaultMaxLineBytes)
		}
		return p.errorf(file, line+1, "read error: %v", err)
	}
	return nil
}

// step parses "<ts> <p> inv|ret ..." or "<ts> crash". shaped says the log
// has a header or a whole step before this line: it is a log, not a
// history.
func (p *parser) step(file int32, line int64, text string, f []string, shaped bool) error {
	if strings.HasPrefix(f[0], "{") {
		return p.errorf(file, line, "JSON is not a log syntax: pmlin merge reads text lines `<timestamp> <event>`")
	}
	if f[0] == "crash" {
		return p.errorf(file, line, "a crash needs a timestamp too: `<timestamp> crash`")
	}
	if len(f) >= 2 && (f[1] == "inv" || f[1] == "ret") {
		// One number before inv or ret: a timestamp without the process
		// id, or a process id without the timestamp (a history's line).
		if shaped {
			return p.errorf(file, line, "no process id: a log line is `<timestamp> <process> %s ...`, and this one has only one number, %s, before %s", f[1], f[0], f[1])
		}
		return p.errorf(file, line, "no timestamp or no process id: a log line is `<timestamp> <process> %s ...`, and this one has only one number, %s, before %s (a history, `%s ...`, needs no merge: `pmlin check` it)", f[1], f[0], f[1], strings.Join(f[:2], " "))
	}
	ts, err := parseTimestamp(f[0])
	if err != nil {
		return p.errorf(file, line, "%v", err)
	}
	rest := f[1:]
	s := step{ts: ts, line: line, file: file, proc: -1}
	switch {
	case len(rest) == 0:
		return p.errorf(file, line, "a timestamp with no event after it")
	case rest[0] == "crash":
		if len(rest) != 1 {
			return p.errorf(file, line, "a crash line has nothing after %q", "crash")
		}
		s.text = "crash"
		p.m.steps = append(p.m.steps, s)
		return nil
	}
	proc, err := strconv.ParseInt(rest[0], 10, 32)
	if err != nil || proc < 0 {
		return p.errorf(file, line, "expected a process id (0 to 2147483647) or crash after the timestamp, found %q", rest[0])
	}
	if len(rest) < 2 || (rest[1] != "inv" && rest[1] != "ret") {
		return p.errorf(file, line, "process %d: expected inv or ret", proc)
	}
	s.proc, s.ret, s.text = int32(proc), rest[1] == "ret", joined(text, f)
	pi := p.procs[s.proc]
	switch {
	case pi == nil:
		pi = &procInfo{file: file}
		p.procs[s.proc] = pi
	case pi.file != file:
		return p.errorf(file, line, "process %d also has steps in %s: each process's steps must be in one log, in order", proc, p.where(pi.file, pi.lastLine))
	case ts < pi.lastTS:
		return p.errorf(file, line, "the clock goes backwards in process %d: %d after %d at %s (a thread's timestamps must not decrease: use one global monotonic clock)", proc, ts, pi.lastTS, p.m.at(file, pi.lastLine))
	}
	pi.lastTS, pi.lastLine = ts, line
	pi.steps = append(pi.steps, int32(len(p.m.steps)))
	p.m.steps = append(p.m.steps, s)
	return nil
}

// fields splits a line at spaces and tabs into buf. Merging is a pass over
// every line of the logs, so it neither allocates a slice per line (as
// strings.Fields does) nor copies the fields.
func fields(line string, buf []string) []string {
	i := 0
	for i < len(line) {
		for i < len(line) && (line[i] == ' ' || line[i] == '\t') {
			i++
		}
		j := i
		for j < len(line) && line[j] != ' ' && line[j] != '\t' {
			j++
		}
		if j > i {
			buf = append(buf, line[i:j])
		}
		i = j
	}
	return buf
}

// joined is the fields after the first one (f is line split by fields),
// separated by one space: a substring of line when it is written that way
// already (no copy), else a new string.
func joined(line string, f []string) string {
	rest := strings.TrimLeft(line, " \t")
	rest = strings.TrimLeft(rest[len(f[0]):], " \t")
	rest = strings.TrimRight(rest, " \t")
	if !strings.Contains(rest, "\t") && !strings.Contains(rest, "  ") {
		return rest
	}
	return strings.Join(f[1:], " ")
}

// parseTimestamp reads an unsigned 64-bit integer, decimal or 0x hex, and
// names what is wrong with anything else.
func parseTimestamp(tok string) (uint64, error) {
	var v uint64
	var err error
	if h, ok := strings.CutPrefix(tok, "0x"); ok {
		v, err = strconv.ParseUint(h, 16, 64)
	} else {
		v, err = strconv.ParseUint(tok, 10, 64)
	}
	switch {
	case err == nil:
		return v, nil
	case strings.HasPrefix(tok, "-"):
		return 0, fmt.Errorf("timestamp %q is negative: timestamps are unsigned integers (nanoseconds of a monotonic clock, say)", tok)
	case strings.ContainsAny(tok, ".eE") && !strings.HasPrefix(tok, "0x"):
		if _, ferr := strconv.ParseFloat(tok, 64); ferr == nil {
			return 0, fmt.Errorf("timestamp %q is not an integer: use integer units (nanoseconds, say), not fractions of seconds", tok)
		}
	case errors.Is(err, strconv.ErrRange):
		return 0, fmt.Errorf("timestamp %q does not fit in 64 bits", tok)
	}
	return 0, fmt.Errorf("expected a timestamp (an unsigned integer) at the start of the line, found %q", tok)
}

// init reads an init line with the history package's own parser, and
// merges its values with those of the other logs.
func (p *parser) init(file int32, line int64, f []string) error {
	text := strings.Join(f, " ")
	r := history.NewReader(strings.NewReader(text), p.m.names[file], history.Options{})
	if _, err := r.Next(); err != io.EOF {
		var he *history.Error
		if errors.As(err, &he) {
			return p.errorf(file, line, "%s", he.Msg)
		}
		return p.errorf(file, line, "init: %v", err)
	}
	if len(f) == 2 && !strings.Contains(f[1], "=") {
		v := r.InitDefault()
		return p.initDefault(file, line, v)
	}
	for a, v := range r.InitWords() {
		if err := p.initWord(file, line, a, v); err != nil {
			return err
		}
	}
	return nil
}

// initDefault merges a default initial value with those of the other logs:
// they must agree.
func (p *parser) initDefault(file int32, line int64, v uint64) error {
	if d := p.m.initDefault; d != nil && d.v != v {
		return p.errorf(file, line, "the default initial value %d differs from %d given at %s", v, d.v, p.where(d.file, d.line))
	}
	p.m.initDefault = &initValue{v: v, file: file, line: line}
	return nil
}

// initWord merges the initial value of address a with those of the other
// logs: they must agree.
func (p *parser) initWord(file int32, line int64, a, v uint64) error {
	if old, ok := p.m.initWords[a]; ok && old.v != v {
		return p.errorf(file, line, "the initial value %d of address %d differs from %d given at %s", v, a, old.v, p.where(old.file, old.line))
	}
	p.m.initWords[a] = initValue{v: v, file: file, line: line}
	return nil
}
