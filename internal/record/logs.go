package record

// Logs are the private logs of a driver's workers and what writes them to
// the driver's Recorder: at the end of each segment (Finish), or, with a
// dumper (binary recordings, the free scheduler's), chunk by chunk while
// the workers run. A segment is Start, the workers' logging (Log), Stop
// for each worker that stops, then Finish once they all have.
type Logs struct {
	rc   *Recorder // nil: unrecorded, the workers only count (Log.Count)
	logs []Log
	dump *dumper // writes the logs as they fill (see dumper)
	pids []int32
	k    int
}

// NewLogs returns the logs of workers processes pids, of operations of k
// words, written to rc (nil: an unrecorded run, whose segments only count
// the operations). dump hands the logs to a dumper as they fill, as a
// binary recording always does (the deterministic scheduler's text
// recordings, fuzzing's tiny segments with one worker at a time, merge at
// the end of the segment instead).
func NewLogs(rc *Recorder, pids []int32, k int, dump bool) *Logs {
	s := &Logs{rc: rc, logs: make([]Log, len(pids)), pids: pids, k: k}
	if rc != nil && (rc.Binary() || dump) {
		s.dump = newDumper(rc, len(pids), k)
	}
	return s
}

// Log is worker w's log.
func (s *Logs) Log(w int) *Log { return &s.logs[w] }

// Share makes the workers log into mem, a shared mapping laid out by
// LayoutSharedLogs, instead of memory of their own; the parent merges
// them (Recorder.MergeLogs). A worker whose log is full stops (Log.Room).
func (s *Logs) Share(mem []uint64) error {
	secs, err := sharedSections(mem, len(s.logs))
	if err != nil {
		return err
	}
	for i := range s.logs {
		s.logs[i] = Log{buf: secs[i].data, fixed: true, commit: secs[i].commit}
		s.logs[i].reset()
	}
	s.dump = nil
	return nil
}

// Start begins a segment whose workers marked live run. yield: they yield
// to the dumper when they hand it a chunk (the free scheduler, with at
// least as many workers as Ps; see dumper.put).
func (s *Logs) Start(live []bool, yield bool) {
	for i := range s.logs {
		if !s.logs[i].fixed {
			s.logs[i].reset()
		}
	}
	if s.dump != nil {
		for i := range s.logs {
			s.logs[i].dump, s.logs[i].w = s.dump, i
		}
		s.dump.start(s.pids, live, yield)
	}
}

// Dumps reports whether a dumper writes the logs as they fill.
func (s *Logs) Dumps() bool { return s.dump != nil }

// Stop hands worker w's last chunk of the segment to the dumper, if there
// is one: the worker stops working in the segment.
func (s *Logs) Stop(w int) {
	if s.dump != nil {
		s.logs[w].retire(true)
	}
}

// Finish writes the segment's logs to the history, merged into text, or
// (with a dumper) what the dumper has not written yet, once every worker
// has stopped (or been abandoned), and returns what was written.
// stamped: the deterministic scheduler stamped the records with its
// logical clock, 1, 2, 3 and so on (see merger.ordered). Unrecorded, it
// returns what the workers counted.
func (s *Logs) Finish(stamped bool) (MergeStats, error) {
	if s.rc == nil {
		st := newMergeStats(len(s.logs))
		for i := range s.logs {
			l := &s.logs[i]
			st.add(i, l.counts, l.lastKind, l.tag)
		}
		return st, nil
	}
	if s.dump != nil {
		return s.dump.finish(s.logs)
	}
	logs := make([][][]uint64, len(s.logs))
	records := 0 // the records, if the deterministic scheduler stamped them
	for i := range s.logs {
		logs[i] = s.logs[i].chunks()
		if stamped {
			for _, n := range s.logs[i].counts {
				records += int(n)
			}
		}
	}
	return s.rc.mergeChunks(logs, s.pids, s.k, records)
}

// Recycle hands s the log chunks of old, logs whose run is over (no
// segment under way, no worker abandoned), to fill again instead of
// making new ones: a fuzz job makes a driver per run, thousands of them,
// and clearing their fresh chunks was a fifth of what a run allocated.
// old must not be used afterwards. Logs written to a dumper (binary
// recordings, the free scheduler) or to shared memory keep theirs.
func (s *Logs) Recycle(old *Logs) {
	if old == nil || old.dump != nil || s.dump != nil || len(s.logs) == 0 {
		return
	}
	i := 0
	give := func(c []uint64) {
		if cap(c) >= maxRecord {
			l := &s.logs[i%len(s.logs)]
			l.spare = append(l.spare, c[:cap(c)])
			i++
		}
	}
	for j := range old.logs {
		o := &old.logs[j]
		if o.fixed {
			continue
		}
		for _, c := range o.full {
			give(c)
		}
		for _, c := range o.spare {
			give(c)
		}
		give(o.buf)
		*o = Log{}
	}
}
