// Package merge turns per-thread logs with timestamps into one history in
// text format v1 (docs/history-format.md): what `pmlin merge` does, so
// that a recorder (recorders/c/pmlin.h, recorders/python, a script of your
// own) may write its threads' logs as they are and leave the merge to pmlin.
//
// A log is text, one step per line, each an event line of format v1 with a
// timestamp in front (docs: recorders/README.md, "Logs for pmlin merge"):
//
//	pmlin-log v1                    optional header, first line
//	init 0                          initial values, before the log's first step
//	1042 1 inv read 10 11           <timestamp> <event of format v1>
//	1057 1 ret 0 0
//	1100 crash                      <timestamp> crash
//
// Timestamps are unsigned 64-bit integers (decimal or 0x hex) of one global
// clock, in any unit; only their order matters. Comments (#) and blank lines
// are ignored. A process's steps must all be in one log, in the order it
// took them, with timestamps that never decrease; logs may hold one process
// each, or many (one file with a timestamp column); crashes may be in any
// log.
//
// The merge orders the steps by timestamp, keeping each process's own
// order: it is a k-way merge over the processes that only ever takes the
// head of a process's steps. Steps of different processes with equal
// timestamps follow the tie rule of recorders/README.md ("What a recorder
// must do", rule 4; package internal/tie): invocations first (a recorded
// interval may grow, never shrink: the merge never invents a real-time
// order), then a response whose process invokes again at that timestamp,
// then by lower process id; and two processes that each respond and
// invoke again at one timestamp are refused (history.ErrCoarseClock): no
// order of their lines would be honest. A crash must not share its
// timestamp with a step (which side of the crash the step is on would be a
// guess). These are errors, each naming the file and line: a clock that
// goes backwards within a process, a process whose steps are in two logs,
// overlapping operations of one process (an invocation while its previous
// operation is pending and no crash came between), a response with nothing
// pending, such a tie, and anything the history reader rejects in the
// merged result (mapped back to the log line).
package merge

import (
	"bufio"
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/pmlin/pmlin/internal/history"
	"github.com/pmlin/pmlin/internal/tie"
)

// Log is one input log: its name, for messages, and its content.
type Log struct {
	Name string
	R    io.Reader
}

// Stats describe a merge.
type Stats struct {
	Logs      int
	Processes int
	Events    int64 // invocations, responses and crashes
	Ops       int64 // invocations
	Crashes   int64
	// Ties counts the steps placed right after a step of another process
	// with the same timestamp: where the order between processes came from
	// the tie rule, not from the clock.
	Ties int64
	// Of a Gather: the generations, those followed by a crash line, and
	// the torn records cut.
	generations, killed, cut int
}

// Merged is a set of logs, read, ordered and validated: ready to write.
type Merged struct {
	names       []string
	bin         []bool // which logs are binary (gathered): positions are byte offsets
	steps       []step
	order       []int32 // indexes in steps, in history order
	initDefault *initValue
	initWords   map[uint64]initValue
	stats       Stats
	title       string   // the first comment of a gathered history
	notes       []string // what Gather found, generation by generation
	// objects are the version 2 objects the gathered logs declare, in the
	// order first declared: with any, the history is of version 2.
	objects []objectDecl
}

// objectDecl is a version 2 object's declaration ("name model params")
// and where it was first given.
type objectDecl struct {
	decl string
	file int32
	off  int64
}

// Stats describe the merge.
func (m *Merged) Stats() Stats { return m.stats }

// String says it in one line.
func (s Stats) String() string {
	if s.generations > 0 {
		return fmt.Sprintf("%s (%d followed by a crash line), %s cut, %s, %s, %s, %s; %s between processes (invocations first)",
			count(int64(s.generations), "generation"), s.killed,
			count(int64(s.cut), "torn record"), count(int64(s.Processes), "process"), count(s.Ops, "operation"),
			count(s.Crashes, "crash"), count(s.Events, "event"), count(s.Ties, "timestamp tie"))
	}
	return fmt.Sprintf("%s, %s, %s, %s, %s; %s between processes (invocations first)",
		count(int64(s.Logs), "log"), count(int64(s.Processes), "process"), count(s.Ops, "operation"),
		count(s.Crashes, "crash"), count(s.Events, "event"), count(s.Ties, "timestamp tie"))
}

// count is "1 log", "2 logs", "3 processes".
func count(n int64, word string) string {
	switch {
	case n == 1:
		return "1 " + word
	case strings.HasSuffix(word, "s") || strings.HasSuffix(word, "sh"):
		return fmt.Sprintf("%d %ses", n, word)
	}
	return fmt.Sprintf("%d %ss", n, word)
}

// Read reads the logs and merges them. Every error is a *history.Error
// naming a log and a line (line 0 when no line is to blame).
func Read(logs []Log) (*Merged, error) {
	m := &Merged{initWords: map[uint64]initValue{}}
	p := &parser{m: m, procs: map[int32]*procInfo{}}
	for i, l := range logs {
		m.names = append(m.names, l.Name)
		if err := p.read(int32(i), l.R); err != nil {
			return nil, err
		}
	}
	m.stats.Logs, m.stats.Processes = len(logs), len(p.procs)
	if err := p.crashTies(0, len(m.steps)); err != nil {
		return nil, err
	}
	order, err := p.kway(0, len(m.steps))
	if err != nil {
		return nil, err
	}
	m.order = order
	if err := p.alternation(); err != nil {
		return nil, err
	}
	if m.stats.Ops == 0 {
		return nil, &history.Error{File: m.allNames(), Msg: "no operation in the logs: nothing to merge (an empty history would prove nothing)"}
	}
	if err := m.validate(); err != nil {
		return nil, err
	}
	return m, nil
}

// crashTies rejects a step with the timestamp of a crash (or of a
// comment placed among the steps), among steps lo to hi.
func (p *parser) crashTies(lo, hi int) error {
	crashAt := map[uint64]int32{}
	for i := lo; i < hi; i++ {
		if s := &p.m.steps[i]; s.proc < 0 {
			crashAt[s.ts] = int32(i)
		}
	}
	if len(crashAt) == 0 {
		return nil
	}
	for _, s := range p.m.steps[lo:hi] {
		if c, ok := crashAt[s.ts]; ok && s.proc >= 0 {
			cs := p.m.steps[c]
			what := "crash"
			if cs.note {
				what = "comment"
			}
			return p.errorf(s.file, s.line, "this step of process %d has the timestamp %d of the %s at %s: a %s must come strictly between the steps before and after it", s.proc, s.ts, what, p.where(cs.file, cs.line), what)
		}
	}
	return nil
}

// Step is what the order of a merge depends on: a step's timestamp, its
// process (-1 for a crash) and whether it is a response. Timestamps are
// compared as unsigned integers.
type Step struct {
	TS   uint64
	Proc int32
	Ret  bool
}

// Order is the merge rule of the package doc for pmlin merge and for
// every caller that orders steps by timestamp (package pmlin's Check):
// streams are the indexes in steps of each process's steps in the order
// the process took them, and of each crash on its own. It runs the merge
// of package internal/tie (tie.Merge: the earliest head, by tie class), its
// streams ranked by process id, then in the order given, so that a tie
// goes to the lower process id, then to the stream given first. So each
// process's own order is kept whatever its timestamps. It returns the
// steps' indexes in history order and the number of ties: steps placed
// right after a step of another process with the same timestamp; or a
// *TieError if two processes each respond and invoke again at one
// timestamp.
func Order(steps []Step, streams [][]int32) (order []int32, ties int64, err error) {
	// rank: the streams that have steps, by process id, then as given.
	var rank [][]int32
	for _, st := range streams {
		if len(st) > 0 {
			rank = append(rank, st)
		}
	}
	slices.SortStableFunc(rank, func(a, b []int32) int { return cmp.Compare(steps[a[0]].Proc, steps[b[0]].Proc) })
	pos := make([]int, len(rank))
	var m tie.Merge
	m.Reset(len(rank))
	head := func(j int) {
		st, x := rank[j], pos[j]
		if x == len(st) {
			m.Done(j)
			return
		}
		s := &steps[st[x]]
		hd := tie.Head{TS: s.TS, Ret: s.Ret}
		if s.Ret && x+1 < len(st) {
			n := &steps[st[x+1]]
			hd.Again = !n.Ret && n.TS == s.TS
		}
		m.Set(j, hd)
	}
	for j := range rank {
		head(j)
	}
	order = make([]int32, 0, len(steps))
	prev := int32(-1)
	for {
		j, _, status := m.Next()
		if status == tie.End {
			return order, ties, nil
		}
		i := rank[j][pos[j]]
		s := &steps[i]
		if prev >= 0 {
			if ps := &steps[prev]; ps.Proc >= 0 && s.Proc >= 0 && ps.Proc != s.Proc && ps.TS == s.TS {
				ties++
			}
		}
		if c, clash := m.Place(j, int64(i)); clash {
			return nil, ties, &TieError{Step: i, Other: int32(c.At)}
		}
		prev = i
		order = append(order, i)
		pos[j]++
		head(j)
	}
}

// TieError is Order's refusal of a tie group: Step (an index in Order's
// steps) and Other are the responses of two processes that each invoke
// again at their common timestamp.
type TieError struct {
	Step, Other int32
}

func (e *TieError) Error() string {
	return fmt.Sprintf("steps %d and %d: %v", e.Step, e.Other, history.ErrCoarseClock)
}

// Unwrap makes errors.Is(err, history.ErrCoarseClock) hold.
func (e *TieError) Unwrap() error { return history.ErrCoarseClock }

// kway merges steps lo to hi (the processes' steps, the crashes and the
// comments placed among them) by Order, and returns their indexes in
// history order; it counts the ties. Each process's steps are a stream,
// in the order they were read; each crash (or comment) is a stream of its
// own, given in the order of the logs and their lines, so that crashes
// with one timestamp keep that order.
func (p *parser) kway(lo, hi int) ([]int32, error) {
	m := p.m
	steps := make([]Step, hi-lo)
	var streams [][]int32
	byProc := map[int32]int{} // process -> its stream
	for i := lo; i < hi; i++ {
		s := &m.steps[i]
		steps[i-lo] = Step{TS: s.ts, Proc: s.proc, Ret: s.ret}
		k, ok := byProc[s.proc]
		if s.proc < 0 || !ok {
			k = len(streams)
			streams = append(streams, nil)
			if s.proc >= 0 {
				byProc[s.proc] = k
			}
		}
		streams[k] = append(streams[k], int32(i-lo))
	}
	order, ties, err := Order(steps, streams)
	var te *TieError
	if errors.As(err, &te) {
		s, o := &m.steps[lo+int(te.Step)], &m.steps[lo+int(te.Other)]
		he := m.errorAt(s.file, s.line, tie.Message(s.proc, s.ts, o.proc, "its response at "+p.where(o.file, o.line))).(*history.Error)
		he.Err = history.ErrCoarseClock
		return nil, he
	}
	if err != nil {
		return nil, err
	}
	for i := range order {
		order[i] += int32(lo)
	}
	m.stats.Ties += ties
	return order, nil
}

// alternation checks, in history order, that each process's operations do
// not overlap and that every response answers a pending invocation.
func (p *parser) alternation() error {
	m := p.m
	pending := map[int32]int32{}     // process -> its pending invocation
	interrupted := map[int32]int32{} // process -> its invocation the last crash cut off
	lastCrash := int32(-1)
	for _, i := range m.order {
		s := &m.steps[i]
		if s.note {
			continue
		}
		m.stats.Events++
		switch {
		case s.proc < 0:
			m.stats.Crashes++
			clear(interrupted)
			for proc, inv := range pending {
				interrupted[proc] = inv
			}
			clear(pending)
			lastCrash = i
		case !s.ret:
			if inv, ok := pending[s.proc]; ok {
				is := &m.steps[inv]
				return p.errorf(s.file, s.line, "process %d invokes an operation while its operation at %s (timestamp %d) is pending: one thread's operations must not overlap (a response is missing, or a timestamp is wrong)", s.proc, m.at(is.file, is.line), is.ts)
			}
			pending[s.proc] = i
			delete(interrupted, s.proc)
			m.stats.Ops++
		default:
			if _, ok := pending[s.proc]; ok {
				delete(pending, s.proc)
				continue
			}
			if inv, ok := interrupted[s.proc]; ok {
				is, cs := &m.steps[inv], &m.steps[lastCrash]
				return p.errorf(s.file, s.line, "process %d responds to its operation at %s, but the crash at %s (timestamp %d) comes between them by timestamp", s.proc, m.at(is.file, is.line), p.where(cs.file, cs.line), cs.ts)
			}
			return p.errorf(s.file, s.line, "process %d responds with no pending operation", s.proc)
		}
	}
	return nil
}

// validate runs the merged history through the history reader, which
// checks every rule of the format, and maps an error back to its log line.
func (m *Merged) validate() error {
	var r *history.Reader
	var finish func() int64 // ends the reading, and says how many lines the header has
	if size := m.size(); size <= 4<<20 {
		// A small history (pmlin gather's, after a short run) is read from
		// memory, with a buffer of its size rather than one of the longest
		// line the reader accepts (a megabyte).
		var b bytes.Buffer
		b.Grow(int(size))
		hdr, err := m.write(&b)
		if err != nil {
			return err
		}
		if len(m.objects) > 0 {
			// Version 2: its reader reads it whole (history.ReadV2); a
			// gathered history of a run is small.
			_, err := history.ReadV2(bytes.NewReader(b.Bytes()), "merged")
			return m.mapError(err, hdr)
		}
		r = history.NewReader(bytes.NewReader(b.Bytes()), "merged", history.Options{})
		finish = func() int64 { return hdr }
	} else if len(m.objects) > 0 {
		pr, pw := io.Pipe()
		done := make(chan int64, 1)
		go func() {
			hdr, err := m.write(pw)
			pw.CloseWithError(err)
			done <- hdr
		}()
		_, err := history.ReadV2(pr, "merged")
		pr.CloseWithError(errors.New("validation stopped"))
		return m.mapError(err, <-done)
	} else {
		pr, pw := io.Pipe()
		done := make(chan int64, 1)
		go func() {
			hdr, err := m.write(pw)
			pw.CloseWithError(err)
			done <- hdr
		}()
		r = history.NewReader(pr, "merged", history.Options{})
		finish = func() int64 {
			pr.CloseWithError(errors.New("validation stopped"))
			return <-done
		}
	}
	var err error
	for err == nil {
		_, err = r.Next()
	}
	hdr := finish()
	if err == io.EOF {
		return nil
	}
	return m.mapError(err, hdr)
}

// mapError maps an error of the history reader on the merged history,
// whose header has hdr lines, back to the log line (or record) to blame.
func (m *Merged) mapError(err error, hdr int64) error {
	if err == nil {
		return nil
	}
	var he *history.Error
	if !errors.As(err, &he) {
		return err
	}
	if k := he.Line - hdr - 1; k >= 0 && k < int64(len(m.order)) {
		s := &m.steps[m.order[k]]
		return m.errorAt(s.file, s.line, he.Msg)
	}
	return &history.Error{File: m.allNames(), Msg: "merged history, line " + fmt.Sprint(he.Line) + ": " + he.Msg}
}

// allNames names the logs, for an error that no one line is to blame for.
func (m *Merged) allNames() string {
	if len(m.names) == 0 {
		return "(no log)"
	}
	return strings.Join(m.names, ", ")
}

// WriteTo writes the merged history: a comment naming the logs and the tie
// rule, the header and initial values, the events.
func (m *Merged) WriteTo(w io.Writer) (int64, error) {
	cw := &countWriter{w: w}
	_, err := m.write(cw)
	return cw.n, err
}

// write writes the history and returns the number of lines before the
// first event.
func (m *Merged) write(w io.Writer) (int64, error) {
	cw := &countWriter{w: w}
	var head bytes.Buffer // a Writer on memory buffers little
	hw := history.NewWriter(&head)
	hw.Comment(m.comment())
	var def uint64
	if m.initDefault != nil {
		def = m.initDefault.v
	}
	words := make(map[uint64]uint64, len(m.initWords))
	for a, iv := range m.initWords {
		words[a] = iv.v
	}
	hw.Header(def, words)
	if err := hw.Flush(); err != nil {
		return 0, err
	}
	hb := head.Bytes()
	if len(m.objects) > 0 {
		// Version 2: its header, then the objects, then the initial
		// values of the words as version 1 renders them (its own header
		// line left out).
		v1 := []byte("pmlin-history v1\n")
		at := bytes.Index(hb, v1)
		var b bytes.Buffer
		b.Write(hb[:at])
		b.WriteString("pmlin-history v2\n")
		for _, o := range m.objects {
			b.WriteString("object " + o.decl + "\n")
		}
		b.Write(hb[at+len(v1):])
		hb = b.Bytes()
	}
	if _, err := cw.Write(hb); err != nil {
		return 0, err
	}
	hdr := cw.lines
	bw := bufio.NewWriterSize(cw, int(min(256<<10, m.size())))
	for _, i := range m.order {
		bw.WriteString(m.steps[i].text)
		bw.WriteByte('\n')
	}
	return hdr, bw.Flush()
}

func (m *Merged) comment() string {
	if m.title != "" {
		return m.title
	}
	names := m.names
	more := ""
	if len(names) > 8 {
		names, more = names[:8], fmt.Sprintf(" and %d more", len(m.names)-8)
	}
	list := strings.Map(func(r rune) rune {
		if r == '\n' || r == '\r' {
			return ' '
		}
		return r
	}, strings.Join(names, ", "))
	return fmt.Sprintf("pmlin merge of %s (%s%s); %s between processes broken invocations first, then by process id",
		count(int64(len(m.names)), "log"), list, more, count(m.stats.Ties, "timestamp tie"))
}

// size is about the bytes of the history's events (its lines after the
// header), at least 4 KiB.
func (m *Merged) size() int64 {
	n := int64(4096)
	for _, i := range m.order {
		n += int64(len(m.steps[i].text)) + 1
	}
	return n
}

// countWriter counts bytes and lines.
type countWriter struct {
	w        io.Writer
	n, lines int64
}

func (c *countWriter) Write(b []byte) (int, error) {
	n, err := c.w.Write(b)
	c.n += int64(n)
	c.lines += int64(bytes.Count(b[:n], []byte{'\n'}))
	return n, err
}
