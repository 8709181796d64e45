package history

import "io"

// LooksConcatenated streams a history and reports whether it looks like
// per-thread logs put one after the other instead of merged by timestamp:
// it has two processes or more, and between consecutive crashes each
// process's events form one contiguous block. A history merged by
// timestamp has that shape only if no two operations ever overlapped, so
// the shape alone proves nothing; together with an operation that observed
// a value before its writer was invoked, it names the recorder's mistake
// (analyzer.RecorderHint). It stops reading at the first interleaving.
func LooksConcatenated(r *Reader) (bool, error) {
	seen := map[int32]bool{} // processes of the current segment
	last := int32(-1)
	for {
		ev, err := r.Next()
		if err == io.EOF {
			return r.processes() >= 2, nil
		}
		if err != nil {
			return false, err
		}
		switch {
		case ev.Kind == Crash:
			clear(seen)
			last = -1
		case ev.ProcIndex != last:
			if seen[ev.ProcIndex] {
				return false, nil
			}
			seen[ev.ProcIndex], last = true, ev.ProcIndex
		}
	}
}
