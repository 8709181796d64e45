package record

import (
	"fmt"
	"slices"
	"sync/atomic"
	"unsafe"

	"github.com/pmlin/pmlin/internal/history"
	"github.com/pmlin/pmlin/internal/tie"
	"github.com/pmlin/pmlin/internal/wire"
	"github.com/pmlin/pmlin/model"
	"github.com/pmlin/pmlin/target"
)

// A worker's log is a flat array of 64-bit words holding records:
//
//	head    kind | k<<4 | ts<<12 (wire.StreamHead), ts the timestamp
//	        (the free scheduler's clock, or the deterministic scheduler's
//	        logical clock), below 2^52 (see stampErr)
//	payload inv read: k addresses; inv cas: k (address, expected, new)
//	        triples; inv swap: k (address, new) pairs; ret values (of a
//	        read or a swap): k values; ret ok: nothing; ret fail: the
//	        blamed address; ret fail values: the blamed address and k
//	        values
//
// These are the stream records of the binary history (internal/wire),
// so that a binary recording writes the logs to the file as they are.
const (
	recInvRead       = wire.RecInvRead
	recInvCAS        = wire.RecInvCAS
	recInvSwap       = wire.RecInvSwap
	recRetRead       = wire.RecRetValues // of a read or a swap
	recRetOK         = wire.RecRetOK
	recRetFail       = wire.RecRetFail
	recRetFailValues = wire.RecRetFailValues
	// recInvOp and recRetOp are the records of an object workload's
	// operation (a data-structure target, history version 2): the
	// invocation's payload is the operation's index in the workload's Ops,
	// then k arguments; the response's, k results; each value two words,
	// its symbol and its number. They are the driver's own, not the
	// binary format's records of the same kinds (wire.RecInvOp and
	// RecRetOp name the object and the operation by their bytes, a log
	// by the index): the merge writes them through the writer's InvokeOp
	// and ReturnOp, as serial records for a binary history or a
	// Recording, as text lines for a text one.
	recInvOp = 10
	recRetOp = 11
	// recKinds bounds the kinds, for counts by kind.
	recKinds = recRetOp + 1
)

// kindCounts counts records by kind.
type kindCounts [recKinds]int64

// isInv reports whether a record kind is an invocation.
func isInv(kind int) bool { return wire.IsInvocation(kind) || kind == recInvOp }

const recHeader = 1 // words before the payload

// The largest k the driver takes (target.MaxK) must fit a record's head:
// this does not compile otherwise.
const _ = uint8(target.MaxK)

// recKind, recK and recTS decode a record's head word.
func recKind(h uint64) int  { return wire.StreamKind(h) }
func recK(h uint64) int     { return wire.StreamK(h) }
func recTS(h uint64) uint64 { return wire.StreamStamp(h) }

func recWords(kind, k int) int {
	switch kind {
	case recInvRead, recInvCAS, recInvSwap, recRetRead, recRetOK, recRetFail, recRetFailValues:
		return recHeader + wire.RecWords(kind, k)
	case recInvOp:
		return recHeader + 1 + 2*k
	case recRetOp:
		return recHeader + 2*k
	}
	return -1
}

// opWords bounds the words of one operation's records (its invocation and
// its response) with k words.
func opWords(k int) int { return recWords(recInvCAS, k) + recWords(recRetFailValues, k) }

// Log is one worker's private log. In memory it is a list of chunks
// (never copied while the worker runs), or, in a binary recording, chunks
// handed to the dumper as they fill; in a shared mapping (Log) it is one
// fixed array that publishes its length after every record, so a reader in
// another process sees whole records only.
type Log struct {
	buf    []uint64   // the current chunk
	n      int        // words used in buf
	full   [][]uint64 // earlier chunks, cut to their used length
	spare  [][]uint64 // chunks to reuse
	fixed  bool
	commit *uint64 // where the length is published (shared logs)

	// What the segment logged so far, counted as the records commit
	// (a binary recording's statistics: no merge counts them).
	counts   kindCounts // by kind
	lastKind int        // of the last record
	lastTS   uint64     // of the last record
	invTS    uint64     // of the last invocation
	tag      uint64     // the largest tag counter of a cas or swap logged
	chunkEv  int64      // records in buf
	// marks index buf for lastInvLines (see chunkMark), a mark every
	// markEvery operations; only in a log handed to a dumper.
	marks []chunkMark

	dump *dumper // full chunks go there (see dumper)
	w    int     // the worker, for the dumper

	_ [64]byte // the workers' logs are in one slice: no false sharing
}

// A log's first chunk has firstChunkWords words, each later one twice the
// one before, up to chunkWords: a fuzz run logs a few hundred words per
// worker and segment, and clearing a full chunk per worker for each run
// cost more than the logging itself.
const (
	firstChunkWords = 1 << 10
	chunkWords      = 1 << 16
)

// maxRecord is the most words a record takes (k = target.MaxK): a chunk
// has room for one at least.
var maxRecord = opWords(target.MaxK)

// A record is written in place, word by word, with stores that are not
// bounds-checked (recPut), where slicing the chunk for it and then each
// word group cost 25 instructions an operation more (cachegrind, of about
// 180 that recording added). They are safe because the worker reserved
// room for the operation's two records first (reserve: opWords(k) words,
// whatever the kinds), each record takes recWords(kind, k) of them
// (TestRecordSizes), and each payload's slices are checked once to be no
// longer than k (payload). record and commitRecord run twice per
// operation of every worker: they take the size from the caller and count
// what the statistics need with a few stores, no decoding. Both are small
// enough to be inlined (a call and its spills cost about as much as the
// rest).

// record returns where the log's next record starts, with its head word
// stored; the caller stores the payload (recPut) and calls commitRecord.
// The log must have room (reserve), and ts must be at most
// wire.MaxStamp (the worker checks each stamp it takes: stampErr).
func (l *Log) record(kind, k int, ts int64) unsafe.Pointer {
	r := unsafe.Add(unsafe.Pointer(unsafe.SliceData(l.buf)), 8*l.n)
	*(*uint64)(r) = wire.StreamHead(kind, k, uint64(ts))
	return r
}

// recPut stores v as word i of the record at r (of record).
func recPut(r unsafe.Pointer, i int, v uint64) { *(*uint64)(unsafe.Add(r, 8*i)) = v }

// payload checks that a record's payload slice s, of k words per group,
// fits its record (the generator makes it exactly k long).
func payload(s []uint64, k int) []uint64 {
	if len(s) > k {
		panic(fmt.Sprintf("driver: a payload of %d words, k = %d", len(s), k))
	}
	return s
}

// reserve makes room for the records of an operation, n words (opWords:
// its invocation and response): a chunk that has not is retired for a new
// one. A fixed log must have room (room, checked first).
func (l *Log) reserve(n int) {
	if l.n+n > len(l.buf) {
		l.overflow()
	}
}

// overflow starts a new chunk.
//
//go:noinline
func (l *Log) overflow() {
	if l.fixed {
		panic("driver: a fixed log overflows (its room is checked before each operation)")
	}
	l.retire(false)
}

// retire puts the current chunk aside (or hands it to the dumper, last
// when the worker is done) and starts a new one.
func (l *Log) retire(last bool) {
	if l.dump != nil {
		if l.n > 0 || last {
			l.dump.put(dumpChunk{w: l.w, words: l.buf[:l.n], events: l.chunkEv, lastTS: l.lastTS, lastKind: l.lastKind, invTS: l.invTS, hasInv: l.invoked() > 0, last: last, marks: l.marks})
		}
		l.buf, l.n, l.chunkEv, l.marks = l.dump.chunk(), 0, 0, nil
		return
	}
	if l.n > 0 {
		l.full = append(l.full, l.buf[:l.n])
	}
	if m := len(l.spare); m > 0 && len(l.spare[m-1]) >= maxRecord {
		l.buf, l.spare = l.spare[m-1], l.spare[:m-1]
	} else {
		l.buf = make([]uint64, max(maxRecord, min(chunkWords, max(firstChunkWords, 2*cap(l.buf)))))
	}
	l.n, l.chunkEv = 0, 0
}

// commitRecord commits the record that record returned last (of kind,
// n words, at ts).
func (l *Log) commitRecord(kind, n int, ts int64) {
	l.n += n
	l.counts[kind]++
	l.chunkEv++
	l.lastKind, l.lastTS = kind, uint64(ts)
	if l.commit != nil {
		// A sequentially consistent store: the record is visible (and, in
		// a shared file mapping, in the page cache that outlives a killed
		// process) before the operation's first region access.
		atomic.StoreUint64(l.commit, uint64(l.n))
	}
}

// markEvery is the operations between two marks of a chunk (a power of
// two): a walk of lastInvLines from a mark is at most 2·markEvery records
// long, and the marks cost the worker a test of the records it counts
// anyway (chunkEv) per operation and a few stores per markEvery
// operations.
const markEvery = 128

// mark marks the invocation about to be logged at ts, one in markEvery
// (a chunk's records alternate invocation and response from its first,
// an invocation: reserve makes room for both records of an operation).
func (l *Log) mark(ts int64) {
	if l.chunkEv&(2*markEvery-1) == 0 {
		l.addMark(ts)
	}
}

//go:noinline
func (l *Log) addMark(ts int64) {
	if l.dump != nil {
		l.marks = append(l.marks, chunkMark{ts: uint64(ts), pos: l.n, recs: l.chunkEv})
	}
}

// invoked is the number of invocations logged in the segment.
func (l *Log) invoked() int64 {
	return l.counts[recInvRead] + l.counts[recInvCAS] + l.counts[recInvSwap] + l.counts[recInvOp]
}

func (l *Log) reset() {
	for _, c := range l.full {
		l.spare = append(l.spare, c[:cap(c)])
	}
	l.full = l.full[:0]
	l.n, l.chunkEv, l.marks = 0, 0, nil
	l.counts, l.lastKind, l.lastTS, l.invTS, l.tag = [len(l.counts)]int64{}, 0, 0, 0, 0
	if l.commit != nil {
		atomic.StoreUint64(l.commit, 0)
	}
}

// chunks returns the log's records, chunk by chunk.
func (l *Log) chunks() [][]uint64 {
	out := make([][]uint64, 0, len(l.full)+1)
	out = append(out, l.full...)
	return append(out, l.buf[:l.n])
}

// room reports whether a fixed log has room for one more operation whose
// records take opw words (opWords, objOpWords).
func (l *Log) room(opw int) bool {
	return !l.fixed || l.n+opw <= len(l.buf)
}

// MergeStats is what a merge of logs wrote.
type MergeStats struct {
	Events   int64
	Invoked  int64 // invocations
	Reads    int64 // read invocations
	CASes    int64 // cas invocations
	Swaps    int64 // swap invocations
	Returned int64
	// LastInv is, per log, the line of its last invocation (0: none), and
	// Pending whether that invocation has no response.
	LastInv []int64
	Pending []bool
	// InvokedBy is, per log, the number of its invocations.
	InvokedBy []int64
	// MaxTag is, per log, the largest tag counter its process used in a
	// new value (for a process that goes on elsewhere).
	MaxTag []uint64
}

// cursor walks one process's chunks of records.
type cursor struct {
	chunks [][]uint64
	recs   []uint64 // the current chunk
	pos    int
}

// again reports whether the record after the head (which head loaded)
// is an invocation with timestamp ts: it may be in the next chunk queued.
func (c *cursor) again(ts uint64) bool {
	recs, next := c.recs, c.pos+recWords(recKind(c.recs[c.pos]), recK(c.recs[c.pos]))
	for j := 0; next >= len(recs); j++ {
		if j == len(c.chunks) {
			return false
		}
		recs, next = c.chunks[j], 0
	}
	return isInv(recKind(recs[next])) && recTS(recs[next]) == ts
}

// head is the kind and timestamp of the next record; a chunk walked to its
// end goes to done (if not nil).
func (c *cursor) head(done func([]uint64)) (kind int, ts uint64, ok bool) {
	for c.pos >= len(c.recs) {
		if c.recs != nil && done != nil {
			done(c.recs)
		}
		c.recs = nil
		if len(c.chunks) == 0 {
			return 0, 0, false
		}
		c.recs, c.chunks, c.pos = c.chunks[0], c.chunks[1:], 0
	}
	h := c.recs[c.pos]
	return recKind(h), recTS(h), true
}

// MergeLogs writes the records of logs (log i is process procs[i]) to the
// recorder in timestamp order. Per log the records are in order and their
// timestamps do not decrease; across logs, equal timestamps follow the tie
// rule of recorders/README.md (rule 4, package internal/tie: invocations
// first, then a response whose process invokes again at that timestamp),
// then the lower log index; two processes that each respond and invoke
// again at one timestamp are an error (history.ErrCoarseClock), since no
// order of their lines would be honest. The logs are validated first: a
// log that does not decode (a damaged shared log) is an error, and
// nothing is written.
func (rc *Recorder) MergeLogs(logs [][]uint64, procs []int32, k int) (MergeStats, error) {
	if rc.streams() != nil {
		return rc.streamLogs(logs, procs, k)
	}
	chunked := make([][][]uint64, len(logs))
	for i, l := range logs {
		chunked[i] = [][]uint64{l}
	}
	return rc.mergeChunks(chunked, procs, k, 0)
}

// streamLogs is MergeLogs for a binary history: the logs, validated, go
// to the file as the streams of a section.
func (rc *Recorder) streamLogs(logs [][]uint64, procs []int32, k int) (MergeStats, error) {
	st := newMergeStats(len(logs))
	chunked := make([][][]uint64, len(logs))
	last := make([]invStamp, len(logs))
	for i, l := range logs {
		var v validator
		if err := v.check(l, k); err != nil {
			return st, fmt.Errorf("log of process %d: %w", procs[i], err)
		}
		chunked[i] = [][]uint64{l}
		var counts kindCounts
		lastKind := 0
		for pos := 0; pos < len(l); {
			kind, kk := recKind(l[pos]), recK(l[pos])
			st.MaxTag[i] = max(st.MaxTag[i], maxTag(kind, l[pos+recHeader:pos+recWords(kind, kk)], procs[i]))
			counts[kind]++
			lastKind = kind
			if isInv(kind) {
				last[i] = invStamp{ts: recTS(l[pos]), ok: true}
			}
			pos += recWords(kind, kk)
		}
		st.add(i, counts, lastKind, st.MaxTag[i])
	}
	st.LastInv = lastInvLines(rc.lines, chunked, nil, make([]int64, len(logs)), last)
	rc.bw.BeginSection(procs)
	for i, l := range logs {
		rc.bw.StreamBlock(i, l, true)
	}
	rc.bw.EndSection(st.Events)
	rc.lines += st.Events
	return st, nil
}

// mergeChunks merges logs (MergeLogs) given as chunks. stamped, if not 0,
// says the logs may be the deterministic scheduler's, whose logical clock
// stamps the records it logs 1, 2, 3 and so on (see merger.ordered), and
// bounds the number of their records.
func (rc *Recorder) mergeChunks(logs [][][]uint64, procs []int32, k int, stamped int) (MergeStats, error) {
	m := newMerger(rc, procs, k, nil)
	for i, l := range logs {
		for _, c := range l {
			if err := m.add(i, c); err != nil {
				return m.st, err
			}
		}
	}
	if stamped == 0 || !m.ordered(stamped) {
		if err := m.run(0, true); err != nil {
			return m.st, err
		}
	}
	return m.st, nil
}

// ordered merges the logs added, all of them, if their timestamps are 1 to
// N, each once, for N records in all (the deterministic scheduler's
// logical clock): the record stamped t is then the t-th in the merge's
// order, as run would write them (distinct timestamps: no ties to break),
// and each is placed by its stamp instead of comparing every log's head
// for every record (run: about 125 instructions a record with four logs,
// 1.4 % of a fuzz run's). It reports false, having written nothing, if
// the stamps are not such. The logs hold at most records records.
func (m *merger) ordered(records int) bool {
	// order[t-1] is 1 + the log of the record stamped t (0: none seen),
	// for every stamp up to the records there can be. N distinct stamps,
	// none above N, are 1 to N.
	order := slices.Grow(m.rc.order[:0], records)[:records]
	m.rc.order = order
	clear(order)
	n, last := 0, uint64(0)
	for i := range m.cs {
		cs := &m.cs[i]
		for j := -1; j < len(cs.chunks); j++ {
			// The chunk at the head (add loaded it), from the head on,
			// then those queued.
			c := cs.recs[min(cs.pos, len(cs.recs)):]
			if j >= 0 {
				c = cs.chunks[j]
			}
			for pos := 0; pos < len(c); pos += recWords(recKind(c[pos]), recK(c[pos])) {
				t := recTS(c[pos])
				if t-1 >= uint64(len(order)) || order[t-1] != 0 {
					return false
				}
				order[t-1] = int32(i) + 1
				last = max(last, t)
				n++
			}
		}
	}
	if uint64(n) != last {
		return false
	}
	order = order[:n]
	for _, o := range order {
		i := int(o) - 1
		m.cs[i].head(m.done) // the next chunk, if the current one is done
		m.write(i)
	}
	for i := range m.cs {
		m.cs[i].head(m.done) // a last chunk to done
	}
	return true
}

// merger merges logs into the recorder's text in timestamp order (see
// MergeLogs), the chunks of each log added as they come: run merges what
// is known to come before any record still to be added. So the driver's
// dumper merges a text recording while the workers run (see dumper), and
// the text is the same as a merge of the whole logs at the end.
type merger struct {
	rc             *Recorder
	procs          []int32
	k              int
	cs             []cursor
	vs             []validator
	merge          tie.Merge // of the logs: each a stream, done while it has no record queued
	st             MergeStats
	done           func([]uint64) // a chunk merged to its end
	addrs, exp, nw []uint64
	// recording is the recorder's writer if it is a history.Recording,
	// which takes an invocation's words as the logs hold them (nil: the
	// words are split for the EventWriter).
	recording *history.Recording
}

func newMerger(rc *Recorder, procs []int32, k int, done func([]uint64)) *merger {
	recording, _ := rc.ew.(*history.Recording)
	m := &merger{rc: rc, procs: procs, k: k, cs: make([]cursor, len(procs)), vs: make([]validator, len(procs)), st: newMergeStats(len(procs)), done: done, recording: recording}
	if rc.obj != nil {
		for i := range m.vs {
			m.vs[i].ops = rc.obj.w.NumOps()
		}
	}
	m.merge.Reset(len(procs))
	for i := range procs {
		m.merge.Done(i) // no record yet
	}
	return m
}

// add validates chunk, the next of log i, and queues it.
func (m *merger) add(i int, chunk []uint64) error {
	if err := m.vs[i].check(chunk, m.k); err != nil {
		return fmt.Errorf("log of process %d: %w", m.procs[i], err)
	}
	m.cs[i].chunks = append(m.cs[i].chunks, chunk)
	m.setHead(i)
	return nil
}

// setHead tells the merge log i's head record. A response's next record
// may not be queued yet: it is taken for none (not an invocation at the
// response's timestamp), which is what it will be when the response is
// written (see run).
func (m *merger) setHead(i int) {
	c := &m.cs[i]
	kind, ts, ok := c.head(m.done)
	if !ok {
		m.merge.Done(i)
		return
	}
	ret := !isInv(kind)
	m.merge.Set(i, tie.Head{TS: ts, Ret: ret, Again: ret && c.again(ts)})
}

// run writes the records with timestamps below below (all of them, with
// all) in the merge's order. A record below below is in its place: every
// record added later has a timestamp of at least below (the caller's
// promise), so it would not have been taken before it; and so is the
// record after it in its log if that one has the same timestamp, which
// the tie rule looks at. The error is a tie no order states honestly.
func (m *merger) run(below uint64, all bool) error {
	for {
		i, hd, st := m.merge.Next()
		if st != tie.Step || !all && hd.TS >= below {
			return nil
		}
		if c, clash := m.merge.Place(i, m.rc.lines+1); clash {
			return &coarseClockError{msg: fmt.Sprintf("driver: line %d of the history: %s", m.rc.lines+1,
				tie.Message(m.procs[i], hd.TS, m.procs[c.Stream], fmt.Sprintf("its response at line %d", c.At)))}
		}
		m.write(i)
		m.setHead(i)
	}
}

// coarseClockError is a merge's refusal of a tie (merger.run).
type coarseClockError struct{ msg string }

func (e *coarseClockError) Error() string { return e.msg }
func (e *coarseClockError) Unwrap() error { return history.ErrCoarseClock }

// write writes the head record of log i.
func (m *merger) write(i int) {
	c := &m.cs[i] // head() left c.recs at the record
	st, hw := &m.st, m.rc.ew
	kind, kk := recKind(c.recs[c.pos]), recK(c.recs[c.pos])
	n := recWords(kind, kk)
	pay := c.recs[c.pos+recHeader : c.pos+n]
	c.pos += n
	p := m.procs[i]
	m.rc.lines++
	st.Events++
	switch kind {
	case recInvRead:
		hw.InvokeRead(p, pay)
		st.Invoked++
		st.InvokedBy[i]++
		st.Reads++
		st.LastInv[i], st.Pending[i] = m.rc.lines, true
	case recInvCAS, recInvSwap:
		st.MaxTag[i] = max(st.MaxTag[i], maxTag(kind, pay, p))
		if kind == recInvSwap {
			st.Swaps++
		} else {
			st.CASes++
		}
		m.invokeWrite(kind, p, pay)
		st.Invoked++
		st.InvokedBy[i]++
		st.LastInv[i], st.Pending[i] = m.rc.lines, true
	case recRetRead:
		hw.ReturnRead(p, pay)
		st.Returned++
		st.Pending[i] = false
	case recRetOK:
		hw.ReturnOK(p)
		st.Returned++
		st.Pending[i] = false
	case recRetFail:
		hw.ReturnFail(p, pay[0])
		st.Returned++
		st.Pending[i] = false
	case recRetFailValues:
		hw.ReturnFailValues(p, pay[0], pay[1:])
		st.Returned++
		st.Pending[i] = false
	case recInvOp:
		st.MaxTag[i] = max(st.MaxTag[i], maxTag(kind, pay, p))
		m.rc.invokeOp(p, pay)
		st.Invoked++
		st.InvokedBy[i]++
		st.LastInv[i], st.Pending[i] = m.rc.lines, true
	case recRetOp:
		m.rc.returnOp(p, pay)
		st.Returned++
		st.Pending[i] = false
	}
}

// invokeWrite writes the invocation of a cas or swap (kind) of process p
// with payload pay: to a Recording as the log holds it, (address,
// expected, new) triples or (address, new) pairs, which the Recording
// keeps as they are; else split into the EventWriter's arrays.
func (m *merger) invokeWrite(kind int, p int32, pay []uint64) {
	switch {
	case m.recording != nil && kind == recInvSwap:
		m.recording.InvokeSwapPairs(p, pay)
		return
	case m.recording != nil:
		m.recording.InvokeCASTriples(p, pay)
		return
	}
	m.addrs, m.exp, m.nw = m.addrs[:0], m.exp[:0], m.nw[:0]
	step := 3
	if kind == recInvSwap {
		step = 2
	}
	for j := 0; j < len(pay); j += step {
		m.addrs = append(m.addrs, pay[j])
		m.exp = append(m.exp, pay[j+1])
		m.nw = append(m.nw, pay[j+step-1])
	}
	if kind == recInvSwap {
		m.rc.ew.InvokeSwap(p, m.addrs, m.nw)
	} else {
		m.rc.ew.InvokeCAS(p, m.addrs, m.exp, m.nw)
	}
}

// MaxTag is the largest per-process tag counter of a workload's new
// values, (process id + 1) << 32 | counter: the counter is a value's low
// 32 bits.
const MaxTag = 1<<32 - 1

// maxTag returns the largest tag counter of process p among the new values
// of an invocation record's payload (0 for a read or a response).
func maxTag(kind int, pay []uint64, p int32) uint64 {
	step, from := 3, 2
	switch kind {
	case recInvSwap:
		step, from = 2, 1
	case recInvCAS:
	case recInvOp: // (symbol, number) pairs after the operation's index
		var m uint64
		for j := 1; j+1 < len(pay); j += 2 {
			if v := pay[j+1]; pay[j] == uint64(model.Num) && v>>32 == uint64(p)+1 {
				m = max(m, v&MaxTag)
			}
		}
		return m
	default:
		return 0
	}
	var m uint64
	for j := from; j < len(pay); j += step {
		if v := pay[j]; v>>32 == uint64(p)+1 {
			m = max(m, v&MaxTag)
		}
	}
	return m
}

// validator checks that a log is a sequence of whole records (none across
// chunks) that alternate invocation and response (of the same kind and
// k), with timestamps that do not decrease.
type validator struct {
	last              uint64
	pending, pendingK int
	// ops is the number of operations of the recorder's object workload
	// (0: none, and the object records are refused).
	ops int
}

func (v *validator) check(l []uint64, k int) error {
	last, pending, pendingK := v.last, v.pending, v.pendingK
	defer func() { v.last, v.pending, v.pendingK = last, pending, pendingK }()
	for pos := 0; pos < len(l); {
		if pos+recHeader > len(l) {
			return fmt.Errorf("record at word %d is cut short", pos)
		}
		kind, kk := recKind(l[pos]), recK(l[pos])
		n := recWords(kind, kk)
		obj := kind == recInvOp || kind == recRetOp
		if n < 0 || !obj && (kk < 1 || kk > k) || obj && (v.ops == 0 || kk > MaxResults) {
			return fmt.Errorf("record at word %d has head %#x", pos, l[pos])
		}
		if pos+n > len(l) {
			return fmt.Errorf("record at word %d is cut short", pos)
		}
		if obj && !v.objPayload(kind, l[pos+recHeader:pos+n]) {
			return fmt.Errorf("record at word %d has a malformed operation", pos)
		}
		if ts := recTS(l[pos]); ts < last {
			return fmt.Errorf("record at word %d goes back in time", pos)
		} else {
			last = ts
		}
		switch kind {
		case recInvRead, recInvCAS, recInvSwap:
			if pending != 0 {
				return fmt.Errorf("record at word %d invokes with an operation pending", pos)
			}
			pending, pendingK = kind, kk
		case recRetRead:
			if pending != recInvRead && pending != recInvSwap || kk != pendingK {
				return fmt.Errorf("record at word %d returns a read or swap that was not invoked", pos)
			}
			pending = 0
		case recRetOK, recRetFail, recRetFailValues:
			if pending != recInvCAS || kk != pendingK {
				return fmt.Errorf("record at word %d returns a cas that was not invoked", pos)
			}
			pending = 0
		case recInvOp:
			if pending != 0 {
				return fmt.Errorf("record at word %d invokes with an operation pending", pos)
			}
			pending, pendingK = kind, kk
		case recRetOp:
			if pending != recInvOp {
				return fmt.Errorf("record at word %d returns an operation that was not invoked", pos)
			}
			pending = 0
		}
		pos += n
	}
	return nil
}

// objPayload checks an object record's payload: an operation index of
// the workload (an invocation), then values whose symbols are the
// format's.
func (v *validator) objPayload(kind int, pay []uint64) bool {
	if kind == recInvOp {
		if pay[0] >= uint64(v.ops) {
			return false
		}
		pay = pay[1:]
	}
	for j := 0; j < len(pay); j += 2 {
		if pay[j] > uint64(model.False) || pay[j] != uint64(model.Num) && pay[j+1] != 0 {
			return false
		}
	}
	return true
}

// Recorder writes a history and counts its lines, so that operations can
// be named by the line of their invocation as every report does. It
// writes text (NewRecorder) or a binary history (NewBinaryRecorder),
// where the workers' logs go to the file as they fill, without a merge.
type Recorder struct {
	ew    history.EventWriter
	bw    *history.BinaryWriter // binary
	lines int64
	order []int32 // merger.ordered's, kept for the next merge
	// obj, if set, makes the history one of version 2 of an object
	// workload's operations (SetObject).
	obj *objText
}

// NewRecorder returns a Recorder writing text to hw (a history.Writer), or
// keeping the history in memory (a history.Recording).
func NewRecorder(hw history.EventWriter) *Recorder { return &Recorder{ew: hw} }

// NewBinaryRecorder returns a Recorder writing a binary history to bw.
func NewBinaryRecorder(bw *history.BinaryWriter) *Recorder { return &Recorder{ew: bw, bw: bw} }

// Binary reports whether the Recorder writes a binary history.
func (rc *Recorder) Binary() bool { return rc.bw != nil }

// Lines is the number of lines written so far (of the text form, for a
// binary history).
func (rc *Recorder) Lines() int64 { return rc.lines }

// Header writes the magic line (every word starts at 0: no init line).
func (rc *Recorder) Header() {
	if rc.obj != nil {
		rc.objHeader()
		return
	}
	rc.ew.Header(0, nil)
	rc.lines++
}

// Comment writes "# text".
func (rc *Recorder) Comment(text string) {
	rc.ew.Comment(text)
	rc.lines++
}

// Promise writes the header's promise of a closing line (End or
// Interrupted), for a recording of planned operations: a file without its
// closing line then reads as cut short (history.RecordingLine).
func (rc *Recorder) Promise(planned uint64) {
	if rc.obj != nil {
		return // version 2 has no closing lines
	}
	rc.ew.TextLine([]byte(history.RecordingLine(planned)))
	rc.lines++
}

// End writes the closing line of a complete recording.
func (rc *Recorder) End() {
	if rc.obj != nil {
		return
	}
	rc.ew.TextLine([]byte(history.EndLine))
	rc.lines++
}

// Interrupted writes the closing line of a recording stopped after done
// of its planned operations.
func (rc *Recorder) Interrupted(done, planned uint64) {
	if rc.obj != nil {
		rc.objInterrupted(done, planned)
		return
	}
	rc.ew.TextLine([]byte(history.InterruptedLine(done, planned)))
	rc.lines++
}

// Crash writes a crash line and returns its line number.
func (rc *Recorder) Crash() int64 {
	rc.ew.Crash()
	rc.lines++
	return rc.lines
}

// Read records a read by process p of addrs that returned vals, as one
// operation per history.DefaultMaxWords words (there is no concurrency
// when the driver records such reads: after recovery, or at the end).
// It returns the line of the first invocation.
func (rc *Recorder) Read(p int32, addrs, vals []uint64) int64 {
	first := rc.lines + 1
	for len(addrs) > 0 {
		n := min(len(addrs), history.DefaultMaxWords)
		rc.ew.InvokeRead(p, addrs[:n])
		rc.ew.ReturnRead(p, vals[:n])
		rc.lines += 2
		addrs, vals = addrs[n:], vals[n:]
	}
	return first
}

// Flush flushes the writer and returns its first error. A binary history
// may end after a Flush (it writes an end block).
func (rc *Recorder) Flush() error { return rc.ew.Flush() }

// InvOp is the kind of an object operation's invocation record, as
// Log.Count counts it; the other kinds are the binary format's
// (wire.RecInvRead, ...).
const InvOp = recInvOp
