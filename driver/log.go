package driver

import (
	"fmt"
	"sync/atomic"

	"github.com/pmlin/pmlin/history"
)

// A worker's log is a flat array of 64-bit words holding records:
//
//	header  kind | k<<8
//	ts      the timestamp (nanoseconds of the monotonic clock, or the
//	        deterministic scheduler's logical clock)
//	payload inv read: k addresses; inv cas: k (address, expected, new)
//	        triples; inv swap: k (address, new) pairs; ret values (of a
//	        read or a swap): k values; ret ok: nothing; ret fail: the
//	        blamed address; ret fail values: the blamed address and k
//	        values
//
// The encoding is private to the package (and to the versions of pmlin a
// parent and its child process share).
const (
	recInvRead = 1 + iota
	recInvCAS
	recInvSwap
	// Responses from here on (the merge puts an invocation first at equal
	// timestamps).
	recRetRead // of a read or a swap
	recRetOK
	recRetFail
	recRetFailValues
)

const recHeader = 2 // words before the payload

func recWords(kind, k int) int {
	switch kind {
	case recInvRead, recRetRead:
		return recHeader + k
	case recInvCAS:
		return recHeader + 3*k
	case recInvSwap:
		return recHeader + 2*k
	case recRetOK:
		return recHeader
	case recRetFail:
		return recHeader + 1
	case recRetFailValues:
		return recHeader + 1 + k
	}
	return -1
}

// opWords bounds the words of one operation's records (its invocation and
// its response) with k words.
func opWords(k int) int { return recWords(recInvCAS, k) + recWords(recRetFailValues, k) }

// wlog is one worker's private log. In memory it is a list of chunks
// (never copied while the worker runs); in a shared mapping (Log) it is one
// fixed array that publishes its length after every record, so a reader in
// another process sees whole records only.
type wlog struct {
	buf    []uint64   // the current chunk
	n      int        // words used in buf
	full   [][]uint64 // earlier chunks, cut to their used length
	spare  [][]uint64 // chunks to reuse
	fixed  bool
	commit *uint64 // where the length is published (shared logs)
}

// A log's first chunk has firstChunkWords words, each later one twice the
// one before, up to chunkWords: a fuzz run logs a few hundred words per
// worker and segment, and clearing a full chunk per worker for each run
// cost more than the logging itself.
const (
	firstChunkWords = 1 << 10
	chunkWords      = 1 << 16
)

// record reserves a record of the given kind and k and returns it with the
// header and timestamp filled in; the caller fills the payload and calls
// commitRecord. ok is false if a fixed log is full.
func (l *wlog) record(kind, k int, ts int64) (rec []uint64, ok bool) {
	n := recWords(kind, k)
	if l.n+n > len(l.buf) {
		if l.fixed {
			return nil, false
		}
		if l.n > 0 {
			l.full = append(l.full, l.buf[:l.n])
		}
		if m := len(l.spare); m > 0 && len(l.spare[m-1]) >= n {
			l.buf, l.spare = l.spare[m-1], l.spare[:m-1]
		} else {
			l.buf = make([]uint64, max(n, min(chunkWords, max(firstChunkWords, 2*cap(l.buf)))))
		}
		l.n = 0
	}
	rec = l.buf[l.n : l.n+n]
	rec[0] = uint64(kind) | uint64(k)<<8
	rec[1] = uint64(ts)
	return rec, true
}

func (l *wlog) commitRecord(rec []uint64) {
	l.n += len(rec)
	if l.commit != nil {
		// A sequentially consistent store: the record is visible (and, in
		// a shared file mapping, in the page cache that outlives a killed
		// process) before the operation's first region access.
		atomic.StoreUint64(l.commit, uint64(l.n))
	}
}

func (l *wlog) reset() {
	for _, c := range l.full {
		l.spare = append(l.spare, c[:cap(c)])
	}
	l.full = l.full[:0]
	l.n = 0
	if l.commit != nil {
		atomic.StoreUint64(l.commit, 0)
	}
}

// chunks returns the log's records, chunk by chunk.
func (l *wlog) chunks() [][]uint64 {
	out := make([][]uint64, 0, len(l.full)+1)
	out = append(out, l.full...)
	return append(out, l.buf[:l.n])
}

// room reports whether a fixed log has room for one more operation of k
// words (its invocation and response).
func (l *wlog) room(k int) bool {
	return !l.fixed || l.n+opWords(k) <= len(l.buf)
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

func (c *cursor) head() (kind int, ts uint64, ok bool) {
	for c.pos >= len(c.recs) {
		if len(c.chunks) == 0 {
			return 0, 0, false
		}
		c.recs, c.chunks, c.pos = c.chunks[0], c.chunks[1:], 0
	}
	return int(c.recs[c.pos] & 0xff), c.recs[c.pos+1], true
}

// MergeLogs writes the records of logs (log i is process procs[i]) to the
// recorder in timestamp order. Per log the records are in order and their
// timestamps do not decrease; across logs an invocation goes before a
// response with the same timestamp (the recorded intervals may only grow),
// then the lower log index. The logs are validated first: a log that does
// not decode (a damaged shared log) is an error, and nothing is written.
func (rc *Recorder) MergeLogs(logs [][]uint64, procs []int32, k int) (MergeStats, error) {
	chunked := make([][][]uint64, len(logs))
	for i, l := range logs {
		chunked[i] = [][]uint64{l}
	}
	return rc.mergeChunks(chunked, procs, k)
}

func (rc *Recorder) mergeChunks(logs [][][]uint64, procs []int32, k int) (MergeStats, error) {
	st := MergeStats{LastInv: make([]int64, len(logs)), Pending: make([]bool, len(logs)), InvokedBy: make([]int64, len(logs)), MaxTag: make([]uint64, len(logs))}
	cs := make([]cursor, len(logs))
	for i, l := range logs {
		var v validator
		for _, c := range l {
			if err := v.check(c, k); err != nil {
				return st, fmt.Errorf("log of process %d: %w", procs[i], err)
			}
		}
		cs[i] = cursor{chunks: l}
	}
	hw := rc.hw
	var addrs, exp, nw []uint64
	for {
		best, bestRet := -1, false
		var bestTS uint64
		for i := range cs {
			kind, ts, ok := cs[i].head()
			if !ok {
				continue
			}
			ret := kind >= recRetRead
			if best < 0 || ts < bestTS || (ts == bestTS && !ret && bestRet) {
				best, bestTS, bestRet = i, ts, ret
			}
		}
		if best < 0 {
			return st, nil
		}
		c := &cs[best] // head() left c.recs at the record
		kind := int(c.recs[c.pos] & 0xff)
		kk := int(c.recs[c.pos] >> 8)
		n := recWords(kind, kk)
		pay := c.recs[c.pos+recHeader : c.pos+n]
		c.pos += n
		p := procs[best]
		rc.lines++
		st.Events++
		switch kind {
		case recInvRead:
			hw.InvokeRead(p, pay)
			st.Invoked++
			st.InvokedBy[best]++
			st.Reads++
			st.LastInv[best], st.Pending[best] = rc.lines, true
		case recInvCAS, recInvSwap:
			addrs, exp, nw = addrs[:0], exp[:0], nw[:0]
			step := 3
			if kind == recInvSwap {
				step = 2
			}
			for j := 0; j < len(pay); j += step {
				addrs = append(addrs, pay[j])
				exp = append(exp, pay[j+1])
				v := pay[j+step-1]
				nw = append(nw, v)
				if v>>32 == uint64(p)+1 {
					st.MaxTag[best] = max(st.MaxTag[best], v&MaxTag)
				}
			}
			if kind == recInvSwap {
				hw.InvokeSwap(p, addrs, nw)
				st.Swaps++
			} else {
				hw.InvokeCAS(p, addrs, exp, nw)
				st.CASes++
			}
			st.Invoked++
			st.InvokedBy[best]++
			st.LastInv[best], st.Pending[best] = rc.lines, true
		case recRetRead:
			hw.ReturnRead(p, pay)
			st.Returned++
			st.Pending[best] = false
		case recRetOK:
			hw.ReturnOK(p)
			st.Returned++
			st.Pending[best] = false
		case recRetFail:
			hw.ReturnFail(p, pay[0])
			st.Returned++
			st.Pending[best] = false
		case recRetFailValues:
			hw.ReturnFailValues(p, pay[0], pay[1:])
			st.Returned++
			st.Pending[best] = false
		}
	}
}

// validator checks that a log is a sequence of whole records (none across
// chunks) that alternate invocation and response (of the same kind and
// k), with timestamps that do not decrease.
type validator struct {
	last              uint64
	pending, pendingK int
}

func (v *validator) check(l []uint64, k int) error {
	last, pending, pendingK := v.last, v.pending, v.pendingK
	defer func() { v.last, v.pending, v.pendingK = last, pending, pendingK }()
	for pos := 0; pos < len(l); {
		if pos+recHeader > len(l) {
			return fmt.Errorf("record at word %d is cut short", pos)
		}
		kind, kk := int(l[pos]&0xff), int(l[pos]>>8)
		n := recWords(kind, kk)
		if n < 0 || kk < 1 || kk > k || l[pos]>>40 != 0 {
			return fmt.Errorf("record at word %d has header %#x", pos, l[pos])
		}
		if pos+n > len(l) {
			return fmt.Errorf("record at word %d is cut short", pos)
		}
		if ts := l[pos+1]; ts < last {
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
		}
		pos += n
	}
	return nil
}

// Recorder writes a history and counts its lines, so that operations can
// be named by the line of their invocation as every report does.
type Recorder struct {
	hw    history.EventWriter
	lines int64
}

// NewRecorder returns a Recorder writing to hw: a history.Writer, or a
// history.Recording that keeps the history in memory.
func NewRecorder(hw history.EventWriter) *Recorder { return &Recorder{hw: hw} }

// Lines is the number of lines written so far.
func (rc *Recorder) Lines() int64 { return rc.lines }

// Header writes the magic line (every word starts at 0: no init line).
func (rc *Recorder) Header() {
	rc.hw.Header(0, nil)
	rc.lines++
}

// Comment writes "# text".
func (rc *Recorder) Comment(text string) {
	rc.hw.Comment(text)
	rc.lines++
}

// Crash writes a crash line and returns its line number.
func (rc *Recorder) Crash() int64 {
	rc.hw.Crash()
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
		rc.hw.InvokeRead(p, addrs[:n])
		rc.hw.ReturnRead(p, vals[:n])
		rc.lines += 2
		addrs, vals = addrs[n:], vals[n:]
	}
	return first
}

// Flush flushes the writer and returns its first error.
func (rc *Recorder) Flush() error { return rc.hw.Flush() }
