package record

import (
	"cmp"
	"runtime"
	"slices"
	"sync"

	"github.com/pmlin/pmlin/internal/history"
	"github.com/pmlin/pmlin/internal/tie"
)

// A recording under the free scheduler (and a binary one under either)
// hands each worker's log over as it fills, chunk by chunk, to the dumper,
// a goroutine that writes the chunks while the workers go on (on a machine
// with a core to spare, the writing costs them nothing). A text recording
// merges them into text as far as it can: up to the least timestamp, over
// the workers still running, of the last chunk each handed over (see
// merger.run); the rest when the workers stop.
//
// A binary recording writes each worker's log to the history as it fills,
// chunk by chunk, as one stream of a section of the binary history
// (internal/wire): no merge, no text. The workers hand their full
// chunks to the dumper, a goroutine that writes them while they go on
// (on a machine with a core to spare, the write costs them nothing), and
// their last chunk when they stop. The reader merges the streams by
// timestamp, as the text recording's merge does.
//
// What the merge would count (MergeStats) the workers count
// as they log; the line of each process's last invocation, which names a
// stuck or failed operation, comes from the chunks the dumper keeps (see
// recycle and lastInvLines).

// dumpChunk is a chunk of a worker's log, with what the worker knew of it.
type dumpChunk struct {
	w        int
	words    []uint64
	events   int64  // records in words
	lastTS   uint64 // the timestamp of its last record
	lastKind int    // the kind of its last record
	invTS    uint64 // the timestamp of the log's latest invocation so far
	hasInv   bool   // the log has an invocation so far
	last     bool   // the worker stopped: its last chunk of the segment
	marks    []chunkMark
}

// dumpLog is what the dumper knows of one worker's log in a segment.
type dumpLog struct {
	kept     []dumpChunk // written, and kept for lastInvLines
	recycled int64       // records of the chunks written and no longer kept
	invTS    uint64
	hasInv   bool
	done     bool   // its last chunk came
	got      bool   // a chunk came (text)
	lastTS   uint64 // of the last chunk that came (text)
}

// dumper writes the workers' chunks during a segment. put and chunk are
// the workers'; start and finish the driver's, before and after them.
type dumper struct {
	rc    *Recorder
	bw    *history.BinaryWriter // binary; else merge
	merge *merger               // text: the segment's merge
	err   error                 // text: a chunk that does not decode
	k     int
	in    chan dumpChunk
	// free holds the chunks written and no longer kept, to reuse, the
	// latest last (see chunk).
	free    [][]uint64
	freeMu  sync.Mutex
	maxFree int
	done    chan struct{}
	logs    []dumpLog
	live    []bool // workers that run in the segment

	// mu orders put with finish: a worker that the deterministic
	// scheduler abandoned may wake after the segment and must not send
	// on a closed channel.
	mu     sync.Mutex
	closed bool
	yield  bool // set by start, read by the workers
}

// dumpChunkWords is the size of the chunks the dumper hands out: a full
// one holds a little more than a MiB of records, so that its copy into
// the file's buffer (directio.File.Write) is one of the runtime's
// non-temporal copies (memmove's, from 1 MiB on, amd64), which do not
// read the cold buffer's lines first nor evict the caches' for them:
// BenchmarkDumpCopy measures a third less user CPU time per MiB written
// (records stored, copied and written: about 250 against 390 µs here)
// than with chunks of chunkWords (512 KiB).
const dumpChunkWords = 1<<17 + 1<<10

func newDumper(rc *Recorder, threads, k int) *dumper {
	return &dumper{rc: rc, bw: rc.streams(), k: k, maxFree: 4*threads + 8, logs: make([]dumpLog, threads)}
}

// start opens the segment's section, of streams procs, for the workers
// marked live.
//
// yield: the workers yield to the dumper when they hand it a chunk (the
// free scheduler, with at least as many workers as Ps; see put).
func (dp *dumper) start(procs []int32, live []bool, yield bool) {
	dp.yield = yield
	if dp.bw != nil {
		dp.bw.BeginSection(procs)
	} else {
		dp.merge, dp.err = newMerger(dp.rc, procs, dp.k, dp.reuse), nil
	}
	for i := range dp.logs {
		dp.logs[i] = dumpLog{kept: dp.logs[i].kept[:0]}
	}
	dp.live = live
	dp.in = make(chan dumpChunk, 2*len(dp.logs)+4)
	dp.done = make(chan struct{})
	dp.closed = false
	go dp.run()
}

// put hands a chunk over (a worker).
func (dp *dumper) put(c dumpChunk) {
	dp.mu.Lock()
	if !dp.closed {
		dp.in <- c
	}
	dp.mu.Unlock()
	if dp.yield {
		// Every P runs a worker: the dumper, just woken onto this one,
		// would wait for a preemption (10 ms) and fall behind, leaving
		// its backlog for the end of the segment, when the workers wait
		// for it. Yielding runs it now, while the other workers go on.
		runtime.Gosched()
	}
}

// chunk returns an empty chunk (a worker): the one let go of last, whose
// lines the caches are likeliest to hold still. A worker's stores to a
// chunk whose lines have left them read each line from memory first; the
// oldest chunk of the pool (a queue's), let go of some 4·threads MiB
// before, had always left the last-level cache here (32 MiB).
func (dp *dumper) chunk() []uint64 {
	dp.freeMu.Lock()
	if n := len(dp.free); n > 0 {
		c := dp.free[n-1]
		dp.free = dp.free[:n-1]
		dp.freeMu.Unlock()
		return c[:cap(c)]
	}
	dp.freeMu.Unlock()
	return make([]uint64, dumpChunkWords)
}

func (dp *dumper) run() {
	defer close(dp.done)
	for c := range dp.in {
		dp.write(c)
	}
}

// write writes a chunk as a block of its worker's stream and keeps it,
// or (text) merges what it can.
func (dp *dumper) write(c dumpChunk) {
	if dp.bw == nil {
		dp.mergeChunk(c)
		return
	}
	dp.bw.StreamBlock(c.w, c.words, c.last)
	l := &dp.logs[c.w]
	l.kept = append(l.kept, c)
	if c.hasInv {
		l.invTS, l.hasInv = c.invTS, true
	}
	l.done = l.done || c.last
	dp.recycle()
}

// mergeChunk adds a chunk to the text merge and merges the records below
// the watermark: every record a running worker will still hand over has a
// timestamp of at least that of the last record it handed over (a log's
// timestamps do not decrease).
func (dp *dumper) mergeChunk(c dumpChunk) {
	if dp.err != nil {
		return
	}
	if dp.err = dp.merge.add(c.w, c.words); dp.err != nil {
		return
	}
	l := &dp.logs[c.w]
	l.got, l.lastTS, l.done = true, c.lastTS, l.done || c.last
	below := ^uint64(0)
	for i, l := range dp.logs {
		switch {
		case !dp.live[i] || l.done:
		case !l.got:
			return // its first record could come before any
		default:
			below = min(below, l.lastTS)
		}
	}
	dp.err = dp.merge.run(below, false)
}

// recycle lets go of the chunks that lastInvLines will not need. It needs
// the records from the last invocation of each log on: a log's last
// invocation is no earlier than the latest invocation the dumper has seen
// of it, so a chunk whose every timestamp is below the least of those
// (over the logs that run) only counts, and is let go.
func (dp *dumper) recycle() {
	low := ^uint64(0)
	for i, l := range dp.logs {
		switch {
		case !dp.live[i] || l.done && !l.hasInv:
		case !l.hasInv:
			return // its last invocation could come anywhere
		default:
			low = min(low, l.invTS)
		}
	}
	for i := range dp.logs {
		l := &dp.logs[i]
		n := 0
		for n < len(l.kept) && l.kept[n].lastTS < low {
			l.recycled += l.kept[n].events
			dp.reuse(l.kept[n].words)
			n++
		}
		l.kept = append(l.kept[:0], l.kept[n:]...)
	}
}

func (dp *dumper) reuse(words []uint64) {
	if cap(words) < dumpChunkWords {
		return
	}
	dp.freeMu.Lock()
	if len(dp.free) < dp.maxFree {
		dp.free = append(dp.free, words)
	}
	dp.freeMu.Unlock()
}

// finish ends the segment once its workers have returned (or been
// abandoned): it writes what the workers did not hand over and closes the
// section, or (text) merges the rest, and returns the merge's statistics.
func (dp *dumper) finish(logs []Log) (MergeStats, error) {
	dp.mu.Lock()
	dp.closed = true
	close(dp.in)
	dp.mu.Unlock()
	<-dp.done
	for i := range logs {
		l := &logs[i]
		if !dp.logs[i].done && l.n > 0 {
			// A worker that never returned (abandoned): its log as it is,
			// as the text merge takes it.
			dp.write(dumpChunk{w: i, words: l.buf[:l.n], events: l.chunkEv, lastTS: l.lastTS, lastKind: l.lastKind, invTS: l.invTS, hasInv: l.invoked() > 0, last: true})
			l.buf, l.n, l.chunkEv = make([]uint64, dumpChunkWords), 0, 0
		}
	}
	if dp.bw == nil {
		if dp.err != nil {
			return dp.merge.st, dp.err
		}
		err := dp.merge.run(0, true)
		return dp.merge.st, err
	}
	st := newMergeStats(len(logs))
	chunks := make([][][]uint64, len(logs))
	sums := make([][]chunkSum, len(logs))
	recycled := make([]int64, len(logs))
	last := make([]invStamp, len(logs))
	for i := range logs {
		l := &logs[i]
		st.add(i, l.counts, l.lastKind, l.tag)
		last[i] = invStamp{ts: l.invTS, ok: l.invoked() > 0}
		for _, c := range dp.logs[i].kept {
			chunks[i] = append(chunks[i], c.words)
			sums[i] = append(sums[i], chunkSum{lastTS: c.lastTS, events: c.events, marks: c.marks})
		}
		recycled[i] = dp.logs[i].recycled
	}
	st.LastInv = lastInvLines(dp.rc.lines, chunks, sums, recycled, last)
	dp.bw.EndSection(st.Events)
	dp.rc.lines += st.Events
	for i := range dp.logs {
		for _, c := range dp.logs[i].kept {
			dp.reuse(c.words)
		}
		dp.logs[i].kept = dp.logs[i].kept[:0]
	}
	return st, nil
}

// newMergeStats returns empty statistics of n logs.
func newMergeStats(n int) MergeStats {
	return MergeStats{LastInv: make([]int64, n), Pending: make([]bool, n), InvokedBy: make([]int64, n), MaxTag: make([]uint64, n)}
}

// add counts log i's records by kind (counts), its last record's kind and
// the largest tag counter of its cas and swaps.
func (st *MergeStats) add(i int, counts kindCounts, lastKind int, tag uint64) {
	inv := counts[recInvRead] + counts[recInvCAS] + counts[recInvSwap] + counts[recInvOp]
	ret := counts[recRetRead] + counts[recRetOK] + counts[recRetFail] + counts[recRetFailValues] + counts[recRetOp]
	st.Events += inv + ret
	st.Invoked += inv
	st.Reads += counts[recInvRead]
	st.CASes += counts[recInvCAS]
	st.Swaps += counts[recInvSwap]
	st.Returned += ret
	st.InvokedBy[i] = inv
	st.Pending[i] = inv > 0 && isInv(lastKind)
	st.MaxTag[i] = tag
}

// lastInvLines returns, for each log, the line its last invocation gets in
// the merge of the logs (0 if it has none), as mergeChunks orders them:
// before is the lines before the merge; logs[i] are the chunks of log i
// from its last invocation on, and recycled[i] the number of its records
// before them.
//
// A record with a lower timestamp than another's always comes out of the
// merge first (the merge takes only heads, and each log's timestamps do
// not decrease), and one with a higher timestamp after. So the line of a
// record with timestamp t is 1 + before + the records with timestamps
// below t + those with timestamp t that the merge takes before it: a merge
// of those few, replayed.
//
// It runs at the end of every segment of a binary recording, while no
// worker runs, over what the dumper kept (with many workers, most of the
// segment; about 1.3 ms of a 100k-operation segment at 8 workers here,
// whose workers ran 60-200 ms): so it walks each log once for all the
// last invocations at a time (their timestamps sorted), not once per
// log, and only up to the latest of them. last is, per log, its last
// invocation's timestamp, as its worker knew it (the dumper) or as the
// caller's own walk over the log found it. sums, if not nil, are what the
// dumper knew of each chunk (its last timestamp, records and marks): a
// chunk wholly below the thresholds still ahead is counted without a
// walk, and within a chunk the walk jumps to the last mark below the
// threshold it looks for (with many workers, the kept chunks are most of
// the segment, and the thresholds spread over it).
func lastInvLines(before int64, logs [][][]uint64, sums [][]chunkSum, recycled []int64, last []invStamp) []int64 {
	out := make([]int64, len(logs))
	var ths []uint64 // the last invocations' timestamps, sorted, distinct
	for _, l := range last {
		if l.ok {
			ths = append(ths, l.ts)
		}
	}
	if len(ths) == 0 {
		return out
	}
	slices.Sort(ths)
	ths = slices.Compact(ths)
	lower := make([]int64, len(ths))   // per timestamp: the records below it
	ties := make([][][]bool, len(ths)) // per timestamp, per log: its records with that timestamp, invocation or not
	for i := range ties {
		ties[i] = make([][]bool, len(logs))
	}
	var rec int64
	for j := range logs {
		rec += recycled[j]
		var sj []chunkSum
		if sums != nil {
			sj = sums[j]
		}
		countBelow(logs[j], sj, ths, lower, ties, j)
	}
	for w := range logs {
		if !last[w].ok {
			continue
		}
		i, _ := slices.BinarySearch(ths, last[w].ts)
		t := slices.Clone(ties[i])
		// Log w's own records with that timestamp, up to its last
		// invocation (what follows it comes out after it).
		lastInv := -1
		for x, inv := range t[w] {
			if inv {
				lastInv = x
			}
		}
		t[w] = t[w][:lastInv+1]
		out[w] = before + rec + lower[i] + replayTies(t, w) + 1
	}
	return out
}

// chunkSum is what the dumper knows of a chunk: the timestamp of its last
// record, its number of records and its marks.
type chunkSum struct {
	lastTS uint64
	events int64
	marks  []chunkMark
}

// chunkMark marks a record of a chunk (an invocation, every markEvery):
// its timestamp, its word and the records before it. Every record before
// it has a timestamp no greater (a log's timestamps do not decrease): a
// walk counting the records below a timestamp above the mark's may jump
// to it.
type chunkMark struct {
	ts   uint64
	pos  int
	recs int64
}

// jump returns the last of marks (sorted) below t and after word pos, if
// any.
func jump(marks []chunkMark, t uint64, pos int) (chunkMark, bool) {
	j, _ := slices.BinarySearchFunc(marks, t, func(m chunkMark, t uint64) int { return cmp.Compare(m.ts, t) })
	// marks[j-1] is the last below t.
	if j == 0 || marks[j-1].pos <= pos {
		return chunkMark{}, false
	}
	return marks[j-1], true
}

// invStamp is the timestamp of a log's last invocation, if it has one.
type invStamp struct {
	ts uint64
	ok bool
}

// countBelow walks the records of log j (chunks) once: for each timestamp
// ths[i] (sorted, distinct) it adds to lower[i] the records with a lower
// timestamp, and lists in ties[i][j], in order, whether each record with
// timestamp ths[i] is an invocation. The log's timestamps do not
// decrease, so one pointer into ths follows the walk, and the walk stops
// past the last of them. A chunk whose last timestamp is below ths[i]
// (sums, if not nil) would only add its records to n: it is not walked.
func countBelow(chunks [][]uint64, sums []chunkSum, ths []uint64, lower []int64, ties [][][]bool, j int) {
	i := 0
	var n int64      // records walked
	counted := false // lower[i] has this log's records below ths[i]
	for x, c := range chunks {
		var marks []chunkMark
		if sums != nil {
			if sums[x].lastTS < ths[i] {
				n += sums[x].events
				continue
			}
			marks = sums[x].marks
		}
		var walked int64 // records of c walked (or jumped over)
		seek := true     // ths[i] is new to the chunk: look for a mark
		for pos := 0; pos < len(c); pos += recWords(recKind(c[pos]), recK(c[pos])) {
			if seek {
				seek = false
				if m, ok := jump(marks, ths[i], pos); ok {
					// The records from pos to the mark are below ths[i].
					n += m.recs - walked
					walked, pos = m.recs, m.pos
				}
			}
			t := recTS(c[pos])
			for i < len(ths) && ths[i] < t {
				if !counted {
					lower[i] += n
				}
				i, counted, seek = i+1, false, true
			}
			if i == len(ths) {
				return // the rest counts for no threshold
			}
			if ths[i] == t {
				if !counted {
					lower[i] += n
					counted = true
				}
				ties[i][j] = append(ties[i][j], isInv(recKind(c[pos])))
			}
			n++
			walked++
		}
	}
	for ; i < len(ths); i++ {
		if !counted {
			lower[i] += n
		}
		counted = false
	}
}

// replayTies merges records of equal timestamps as mergeChunks and the
// reader of a binary history do (tie.Merge) and returns how many come out
// before the last record of log w.
func replayTies(ties [][]bool, w int) int64 {
	pos := make([]int, len(ties))
	var m tie.Merge
	m.Reset(len(ties))
	head := func(j int) {
		t, x := ties[j], pos[j]
		if x == len(t) {
			m.Done(j)
			return
		}
		m.Set(j, tie.Head{Ret: !t[x], Again: !t[x] && x+1 < len(t) && t[x+1]})
	}
	for j := range ties {
		head(j)
	}
	var n int64
	for {
		j, _, _ := m.Next()
		if j == w && pos[w] == len(ties[w])-1 {
			return n
		}
		pos[j]++
		n++
		head(j)
	}
}
