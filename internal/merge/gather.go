package merge

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/pmlin/pmlin/internal/history"
)

// genName is the name the recorders give a generation's log file.
var genName = regexp.MustCompile(`^gen-([0-9]+)\.pmlog$`)

// Gather turns the log files of the C and Python recorders into one
// history (`pmlin gather`; recorders/README.md, "Logs that survive a
// kill"). Each path is a directory, whose files gen-NNNNNN.pmlog are read,
// or a log file. Each file is one generation: one run of the program,
// ended by a kill or by its own close. Gather reads each log up to its
// last committed record and cuts a record the kill left half written,
// reporting it (Notes); it merges each generation's steps by timestamp
// under the rules of Read (the tie rule of recorders/README.md, rule 4),
// and writes the generations one after the other, with a crash line after
// every generation that was killed or left an operation pending: that
// line cuts off the operations pending at the kill. A generation killed
// before it wrote its header recorded nothing; its crash line is written
// all the same. Generations must be numbered without gaps and follow one
// another in time. Errors name the file and the byte offset of the record
// to blame: a log the program wrote over, a misuse the recorder refused
// (its message is in the log), and whatever Read would refuse.
func Gather(paths ...string) (*Merged, error) {
	files, err := generationFiles(paths)
	if err != nil {
		return nil, err
	}
	gens := make([]*genFile, 0, len(files))
	for _, path := range files {
		g, err := readGeneration(path)
		if err != nil {
			return nil, err
		}
		if g.errText != "" {
			return nil, logError(g.path, g.errOff, "%s: the recorder refused a misuse and stopped recording: %s", logName(g.errLog), g.errText)
		}
		if g.empty {
			m := genName.FindStringSubmatch(filepath.Base(path))
			if m == nil {
				return nil, logError(path, -1, "no header (the process was killed while opening its logs?), and its name does not say its generation (gen-NNNNNN.pmlog)")
			}
			if g.gen, err = strconv.ParseUint(m[1], 10, 64); err != nil {
				return nil, logError(path, -1, "generation %s: %v", m[1], err)
			}
		}
		gens = append(gens, g)
	}
	slices.SortStableFunc(gens, func(a, b *genFile) int {
		switch {
		case a.gen < b.gen:
			return -1
		case a.gen > b.gen:
			return 1
		}
		return 0
	})
	for i := 1; i < len(gens); i++ {
		a, b := gens[i-1], gens[i]
		switch {
		case a.gen == b.gen:
			return nil, logError(b.path, -1, "generation %d again (also %s): give each generation once", b.gen, a.path)
		case a.gen+1 != b.gen:
			return nil, logError(b.path, -1, "generation %d follows generation %d (%s): the generations between them are missing, and their operations with them", b.gen, a.gen, a.path)
		}
	}
	m := &Merged{initWords: map[uint64]initValue{}}
	p := &parser{m: m, procs: map[int32]*procInfo{}}
	var prev *span
	var cut, killed int
	for gi, g := range gens {
		m.names = append(m.names, g.path)
		m.bin = append(m.bin, true)
		sp, note, crashed, err := p.generation(int32(gi), g)
		if err != nil {
			return nil, err
		}
		if sp.steps > 0 {
			if prev != nil && sp.first <= prev.last {
				return nil, m.errorAt(int32(gi), sp.firstAt, fmt.Sprintf("generation %d has a step at timestamp %d, not after the last step of generation %d at %s (timestamp %d): the generations overlap in time (was the killed process still running when this one started? do both use CLOCK_MONOTONIC?)",
					g.gen, sp.first, prev.gen, m.where(prev.file, prev.lastAt), prev.last))
			}
			prev = &sp
		}
		m.notes = append(m.notes, note)
		cut += len(g.torn)
		if crashed {
			killed++
		}
	}
	m.stats.Logs, m.stats.Processes = len(gens), len(p.procs)
	m.stats.generations, m.stats.killed, m.stats.cut = len(gens), killed, cut
	if err := p.alternation(); err != nil {
		return nil, err
	}
	if m.stats.Ops == 0 {
		return nil, &history.Error{File: m.allNames(), Msg: "no operation in the logs: nothing to gather (an empty history would prove nothing)"}
	}
	m.title = fmt.Sprintf("pmlin gather of %s (%s), %s; %s cut; %s between processes broken invocations first, then by process id",
		count(int64(len(gens)), "generation"), gatheredFrom(paths), fmt.Sprintf("%d of them followed by a crash line (killed, or operations left pending)", killed),
		count(int64(cut), "torn record"), count(m.stats.Ties, "timestamp tie"))
	if err := m.validate(); err != nil {
		return nil, err
	}
	return m, nil
}

// Notes says what Gather found in each generation: its file, its process,
// whether it was killed and what it left pending, and each torn record it
// cut (thread, byte offset, size). The gathered history has them as
// comments too, each at the start of its generation.
func (m *Merged) Notes() []string { return slices.Clone(m.notes) }

// gatheredFrom names what Gather read, for the history's first comment.
func gatheredFrom(paths []string) string {
	s := strings.Join(paths, ", ")
	if len(s) > 200 {
		s = s[:200] + "..."
	}
	return strings.Map(func(r rune) rune {
		if r == '\n' || r == '\r' {
			return ' '
		}
		return r
	}, s)
}

// generationFiles lists the log files of paths: each directory's
// gen-NNNNNN.pmlog, each file as it is; a file given twice is refused.
func generationFiles(paths []string) ([]string, error) {
	var files []string
	var seen []os.FileInfo
	add := func(path string) error {
		fi, err := os.Stat(path)
		if err != nil {
			return err
		}
		for k, o := range seen {
			if os.SameFile(fi, o) {
				return fmt.Errorf("%s and %s are the same file: give each log file once", files[k], path)
			}
		}
		files, seen = append(files, path), append(seen, fi)
		return nil
	}
	for _, path := range paths {
		fi, err := os.Stat(path)
		if err != nil {
			return nil, err
		}
		if !fi.IsDir() {
			if err := add(path); err != nil {
				return nil, err
			}
			continue
		}
		entries, err := os.ReadDir(path)
		if err != nil {
			return nil, err
		}
		found := false
		for _, e := range entries {
			if genName.MatchString(e.Name()) && e.Type().IsRegular() {
				found = true
				if err := add(filepath.Join(path, e.Name())); err != nil {
					return nil, err
				}
			}
		}
		if !found {
			return nil, fmt.Errorf("%s: no log files (gen-NNNNNN.pmlog) in this directory", path)
		}
	}
	if len(files) == 0 {
		return nil, errors.New("no log files to gather")
	}
	return files, nil
}

// span is where a generation's steps lie in time.
type span struct {
	gen             uint64
	file            int32
	steps           int
	first, last     uint64 // timestamps
	firstAt, lastAt int64  // their byte offsets
}

// generation adds generation g (file index file) to the history: a
// comment saying what it is, the comments it made before recording, its
// steps merged by timestamp, and a crash line if it was killed or left an
// operation pending. It returns where its steps lie in time, the note (the
// comment's text) and whether a crash line follows.
func (p *parser) generation(file int32, g *genFile) (sp span, note string, crashed bool, err error) {
	m := p.m
	sp = span{gen: g.gen, file: file}
	addNote := func(text string, line int64) {
		m.order = append(m.order, int32(len(m.steps)))
		m.steps = append(m.steps, step{text: "# " + oneLine(text), line: line, file: file, proc: -1, note: true})
	}
	noteAt := len(m.steps)
	addNote("", -1) // its text comes once the generation is read
	var top []record
	var steps []step
	var lastCrash uint64 // an operation invoked before pmlin_crash is not pending
	for _, r := range g.logs[0:min(1, len(g.logs))] {
		for _, c := range r {
			if c.kind == recCrash {
				lastCrash = c.ts
			}
		}
	}
	pending, nsteps := 0, 0
	var tornThreads []string
	for _, t := range g.torn {
		tornThreads = append(tornThreads, fmt.Sprintf("%s: a torn record cut (a %s, %s at byte offset %d)",
			strings.TrimSuffix(logName(t.log), "'s log"), recordName(t.kind), count(t.words, "word"), t.off))
	}
	ew := newEventWriter()
	for _, r := range g.logs[0:min(1, len(g.logs))] {
		for i := range r {
			if r[i].kind == recObject {
				name, err := p.object(file, &r[i])
				if err != nil {
					return sp, "", false, err
				}
				ew.objs = append(ew.objs, name)
			}
		}
	}
	var events []int // the indexes in steps of the events, whose text ew renders
	for l, recs := range g.logs {
		for i := range recs {
			r := &recs[i]
			if l == 0 {
				switch r.kind {
				case recInit:
					if err := p.initDefault(file, r.off, r.payload[0]); err != nil {
						return sp, "", false, err
					}
				case recInitWord:
					if err := p.initWord(file, r.off, r.payload[0], r.payload[1]); err != nil {
						return sp, "", false, err
					}
				case recComment:
					if r.ts == 0 {
						top = append(top, *r)
					} else {
						steps = append(steps, step{ts: r.ts, text: "# " + oneLine(r.text()), line: r.off, file: file, proc: -1, note: true})
					}
				case recCrash:
					steps = append(steps, step{ts: r.ts, text: "crash", line: r.off, file: file, proc: -1})
				case recClose:
					g.closed = true
				}
				continue
			}
			proc := int32(l - 1)
			nsteps++
			ret, err := ew.event(proc, r)
			if err != nil {
				return sp, "", false, logError(g.path, r.off, "%s: %v", logName(l), err)
			}
			events = append(events, len(steps))
			steps = append(steps, step{ts: r.ts, line: r.off, file: file, proc: proc, ret: ret})
			if p.procs[proc] == nil {
				p.procs[proc] = &procInfo{file: file}
			}
			if i == len(recs)-1 && !ret && r.ts > lastCrash {
				pending++
			}
		}
	}
	for i, text := range ew.lines() {
		steps[events[i]].text = text
	}
	for i := range top {
		addNote(top[i].text(), top[i].off)
	}
	lo := len(m.steps)
	m.steps = append(m.steps, steps...)
	for i := lo; i < len(m.steps); i++ {
		s := &m.steps[i]
		if s.proc < 0 && s.note {
			continue
		}
		if sp.steps == 0 || s.ts < sp.first {
			sp.first, sp.firstAt = s.ts, s.line
		}
		if sp.steps == 0 || s.ts > sp.last {
			sp.last, sp.lastAt = s.ts, s.line
		}
		sp.steps++
	}
	if err := p.crashTies(lo, len(m.steps)); err != nil {
		return sp, "", false, err
	}
	order, err := p.kway(lo, len(m.steps))
	if err != nil {
		return sp, "", false, err
	}
	m.order = append(m.order, order...)
	// The note: what the generation was and how it ended.
	var b strings.Builder
	fmt.Fprintf(&b, "generation %d: %s", g.gen, g.path)
	switch {
	case g.empty:
		b.WriteString(": no header: the process was killed while opening its logs, and recorded nothing; killed")
	default:
		fmt.Fprintf(&b, " (process %d, %s, %s)", g.osPid, count(int64(g.threads), "thread"), count(int64(nsteps), "step"))
		switch {
		case !g.closed:
			fmt.Fprintf(&b, "; killed, %s pending", count(int64(pending), "operation"))
		case pending > 0:
			fmt.Fprintf(&b, "; closed with %s pending", count(int64(pending), "operation"))
		default:
			b.WriteString("; closed")
		}
	}
	if crashed = !g.closed || pending > 0; crashed {
		b.WriteString(": a crash line follows")
		m.order = append(m.order, int32(len(m.steps)))
		m.steps = append(m.steps, step{ts: sp.last, text: "crash", line: -1, file: file, proc: -1})
	}
	for _, t := range tornThreads {
		b.WriteString("; " + t)
	}
	note = b.String()
	m.steps[noteAt].text = "# " + oneLine(note)
	return sp, note, crashed, nil
}

// object adds the object a generation declares (record r of file) to the
// history's objects, and returns its name: a run declares the objects of
// the runs before it again, and must declare each as they did.
func (p *parser) object(file int32, r *record) (string, error) {
	m := p.m
	decl := oneLine(r.text())
	name, _, _ := strings.Cut(decl, " ")
	if !opName.MatchString(name) {
		return "", m.errorAt(file, r.off, fmt.Sprintf("an object declaration %q that does not begin with a name", decl))
	}
	for _, o := range m.objects {
		oname, _, _ := strings.Cut(o.decl, " ")
		if oname != name {
			continue
		}
		if o.decl != decl {
			return "", m.errorAt(file, r.off, fmt.Sprintf("object %s is declared as %q here, as %q at %s: every run must declare its objects alike", name, decl, o.decl, m.where(o.file, o.off)))
		}
		return name, nil
	}
	m.objects = append(m.objects, objectDecl{decl: decl, file: file, off: r.off})
	return name, nil
}

// oneLine keeps a comment on its line.
func oneLine(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '\n' || r == '\r' {
			return ' '
		}
		return r
	}, s)
}

// eventWriter renders records as event lines, with the history package's
// Writer (one rendering of events for every history pmlin writes), all of a
// generation into one buffer.
type eventWriter struct {
	buf     bytes.Buffer
	w       *history.Writer
	a, b, c []uint64 // a cas's or a swap's addresses and values
	objs    []string // the generation's objects' names, by id (version 2)
	line    []byte
}

// symbols are the version 2 symbols by their code in a record
// (PMLIN_NIL ... PMLIN_FALSE in pmlin.h).
var symbols = [...]string{1: "nil", 2: "ok", 3: "fail", 4: "empty", 5: "true", 6: "false"}

// appendValues renders n version 2 values: w[0] is their symbol mask
// (bit i: value i is a symbol), w[1:] the numbers and symbol codes.
func appendValues(b []byte, n int, w []uint64) ([]byte, error) {
	if n < 64 && w[0]>>n != 0 {
		return nil, fmt.Errorf("a symbol mask %#x with bits beyond its %d values", w[0], n)
	}
	for i := range n {
		b = append(b, ' ')
		v := w[1+i]
		if w[0]>>i&1 == 0 {
			b = append(b, history.FormatValue(v)...)
			continue
		}
		if v == 0 || v >= uint64(len(symbols)) {
			return nil, fmt.Errorf("value %d is a symbol of code %d, which names none", i+1, v)
		}
		b = append(b, symbols[v]...)
	}
	return b, nil
}

// opName is a version 2 record's operation name, if it is a name.
var opName = regexp.MustCompile(`^[a-z][a-z0-9_-]*$`)

func newEventWriter() *eventWriter {
	e := &eventWriter{}
	e.w = history.NewWriter(&e.buf)
	return e
}

// event renders the event line of a thread's record, and says whether it
// is a response. The reader checked each record's size against its kind;
// an error is a version 2 record that names no object, operation or
// symbol.
func (e *eventWriter) event(proc int32, r *record) (bool, error) {
	k, w := int(r.n), r.payload
	switch r.kind {
	case recInvOp, recRetOp, recRetUnknown:
		e.w.Flush() // the lines of both renderings in order
		b := strconv.AppendInt(e.line[:0], int64(proc), 10)
		var err error
		switch r.kind {
		case recInvOp:
			n := k & 0xFF
			if w[0] >= uint64(len(e.objs)) {
				return false, fmt.Errorf("an operation on object %d, but the recorder's own log declares %s", w[0], count(int64(len(e.objs)), "object"))
			}
			name := wordsText(w[2+n:], k>>8)
			if !opName.MatchString(name) {
				return false, fmt.Errorf("an operation name %q that is not [a-z][a-z0-9_-]*", name)
			}
			b = append(b, " inv "...)
			b = append(b, e.objs[w[0]]...)
			b = append(b, ' ')
			b = append(b, name...)
			b, err = appendValues(b, n, w[1:])
		case recRetOp:
			b = append(b, " ret"...)
			b, err = appendValues(b, k, w)
		default:
			b = append(b, " ret ?"...)
		}
		if err != nil {
			return false, err
		}
		e.line = append(b, '\n')
		e.buf.Write(e.line)
		return r.kind != recInvOp, nil
	}
	split := func(stride int) {
		e.a, e.b, e.c = e.a[:0], e.b[:0], e.c[:0]
		for i := range k {
			e.a, e.b = append(e.a, w[stride*i]), append(e.b, w[stride*i+1])
			if stride == 3 {
				e.c = append(e.c, w[stride*i+2])
			}
		}
	}
	switch r.kind {
	case recInvRead:
		e.w.InvokeRead(proc, w[:k])
	case recInvCAS:
		split(3)
		e.w.InvokeCAS(proc, e.a, e.b, e.c)
	case recInvSwap:
		split(2)
		e.w.InvokeSwap(proc, e.a, e.b)
	case recRetValues:
		e.w.ReturnRead(proc, w[:k])
	case recRetOK:
		e.w.ReturnOK(proc)
	case recRetFail:
		e.w.ReturnFail(proc, w[0])
	case recRetFailValues:
		e.w.ReturnFailValues(proc, w[0], w[1:1+k])
	}
	return isRet(r.kind), nil
}

// lines is the events rendered so far, one string each, in order.
func (e *eventWriter) lines() []string {
	e.w.Flush()
	if e.buf.Len() == 0 {
		return nil
	}
	return strings.Split(strings.TrimSuffix(e.buf.String(), "\n"), "\n")
}
