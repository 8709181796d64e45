package merge

import (
	"encoding/binary"
	"fmt"
	"io"
	"math/bits"
	"os"
	"strings"
)

// The log files of the C and Python recorders (recorders/README.md, "The
// file format"): a header page, the recorder's own log, then one log per
// thread, each a sequence of records. A record is a first word (kind | n
// << 8, and once committed check << 32 | 1 << 63), a timestamp and a
// payload; the writer stores the first word without the commit bit, then
// the rest, then the first word with it, last. These constants are those
// of recorders/c/pmlin.h and recorders/python/pmlin_recorder.py.
const (
	logMagic     = 0x31474C4E494C4D50 // "PMLINLG1"
	logByteOrder = 0x0102030405060708
	pageWords    = 512
	errWords     = 64 // kept free at the end of each log for its error record
	maxN         = 0xFFFFFF
	committed    = uint64(1) << 63
	kOff         = 0xA0761D6478BD642F
	kLog         = 0xD6E8FEB86659FD93
	// lookAhead is how many words after the end of a log (or after a torn
	// record) must be zero: the writer stores nothing beyond the record it
	// is writing, so data there means the log was written over.
	lookAhead = 64
)

// Record kinds.
const (
	recInvRead = iota + 1
	recInvCAS
	recInvSwap
	recRetValues
	recRetOK
	recRetFail
	recRetFailValues
	recInvOp      // version 2: object id, symbol mask, k args, the op's name (n = k | name length << 8)
	recRetOp      // version 2: symbol mask, k results
	recRetUnknown // version 2: "ret ?"
	recError      = 16
	recComment    = 17
	recInit       = 18
	recInitWord   = 19
	recCrash      = 20
	recClose      = 21
	recObject     = 22 // version 2: "name model params"; its id is its rank in the log
)

// isRet says whether a thread's record of kind is a response.
func isRet(kind uint64) bool {
	return kind >= recRetValues && kind <= recRetFailValues || kind == recRetOp || kind == recRetUnknown
}

// recordWords is the size of a record of kind with n, in words; 0 for no
// kind of record.
func recordWords(kind, n uint64) int64 {
	switch kind {
	case recInvRead, recRetValues:
		return 2 + int64(n)
	case recInvCAS:
		return 2 + 3*int64(n)
	case recInvSwap:
		return 2 + 2*int64(n)
	case recRetOK, recCrash, recClose:
		return 2
	case recRetFail, recInit:
		return 3
	case recRetFailValues:
		return 3 + int64(n)
	case recInitWord:
		return 4
	case recInvOp:
		return 4 + int64(n&0xFF) + (int64(n>>8)+7)/8
	case recRetOp:
		return 3 + int64(n)
	case recRetUnknown:
		return 2
	case recError, recComment, recObject:
		return 2 + (int64(n)+7)/8
	}
	return 0
}

// recordName says what a record is, for the report of a torn one.
func recordName(kind uint64) string {
	switch kind {
	case recInvRead:
		return "read invocation"
	case recInvCAS:
		return "cas invocation"
	case recInvSwap:
		return "swap invocation"
	case recRetValues:
		return "response with values"
	case recRetOK:
		return "ok response"
	case recRetFail, recRetFailValues:
		return "failure response"
	case recInvOp:
		return "version 2 invocation"
	case recRetOp:
		return "version 2 response"
	case recRetUnknown:
		return "unknown (?) response"
	case recObject:
		return "object declaration"
	case recError:
		return "error message"
	case recComment:
		return "comment"
	case recInit, recInitWord:
		return "initial value"
	case recCrash:
		return "crash"
	case recClose:
		return "close"
	}
	return "record (its first word half written)"
}

// checkOf is a record's 31-bit check: words are the record with its first
// word as written before the commit (kind | n << 8), seed the log's, off
// the record's word offset in its log.
func checkOf(seed uint64, off int64, words []uint64) uint64 {
	h := seed + uint64(off)*kOff
	for i, w := range words {
		h ^= bits.RotateLeft64(w, 7*i&63)
	}
	return ((h ^ h>>32) * kLog) >> 33
}

// record is one committed record of a log.
type record struct {
	kind, n uint64
	ts      uint64
	payload []uint64
	off     int64 // byte offset in the file
}

// text is the payload of a comment, an error record or an object
// declaration.
func (r *record) text() string { return wordsText(r.payload, int(r.n)) }

// wordsText is the first n bytes of words, as the writer's memcpy laid
// them out.
func wordsText(words []uint64, n int) string {
	b := make([]byte, 8*len(words))
	for i, w := range words {
		binary.LittleEndian.PutUint64(b[8*i:], w)
	}
	return strings.ToValidUTF8(string(b[:min(n, len(b))]), "?")
}

// tornRecord is a record a log began and never committed: the kill came
// while it was being written. The reader cuts it.
type tornRecord struct {
	log   int   // 0: the recorder's own log; i + 1: thread i's
	off   int64 // byte offset in the file
	words int64 // its size, as its first word says (1 when that is unreadable)
	kind  uint64
}

// genFile is one generation's log file, read.
type genFile struct {
	path     string
	gen      uint64
	empty    bool // no header: the process was killed while opening its logs
	osPid    uint64
	threads  int
	logs     [][]record // 0: the recorder's own; i + 1: thread i's
	torn     []tornRecord
	closed   bool   // the program ended its recording (pmlin_free, close())
	errText  string // an error record: the recorder refused a misuse
	errOff   int64
	errLog   int
	bytesLen int64
}

// logError is an error in a log file, at a byte offset (-1: none).
func logError(path string, off int64, format string, args ...any) error {
	m := &Merged{names: []string{path}, bin: []bool{true}}
	return m.errorAt(0, off, fmt.Sprintf(format, args...))
}

// readGeneration reads a log file: its header, then every log, each up to
// its last committed record. A record begun and not committed (the kill
// came while it was written) is cut and reported; anything else that
// does not check out is an error: the program wrote over its logs, or the
// file is not a log.
func readGeneration(path string) (*genFile, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	g := &genFile{path: path, bytesLen: fi.Size()}
	head := make([]byte, 8*pageWords)
	n, err := f.ReadAt(head, 0)
	if err != nil && err != io.EOF {
		return nil, err
	}
	word := func(i int) uint64 {
		if 8*i+8 > n {
			return 0
		}
		return binary.LittleEndian.Uint64(head[8*i:])
	}
	switch magic := word(0); {
	case magic == 0:
		// Killed before the header was complete: the writer stores the
		// magic last, and nothing else before it.
		g.empty = true
		return g, nil
	case magic != logMagic:
		return nil, logError(path, -1, "not a pmlin log file (it begins with %#x; a log file begins with PMLINLG1)", magic)
	case word(1) != 1:
		return nil, logError(path, 8, "log file version %d: this pmlin reads version 1", word(1))
	case word(2) != logByteOrder:
		return nil, logError(path, 16, "written on a machine of another byte order (%#x): this pmlin reads little-endian log files", word(2))
	}
	g.gen, g.osPid = word(3), word(9)
	threads, nonce, headWords, recWords, threadWords := word(4), word(5), word(6), word(7), word(8)
	switch {
	case threads < 1 || threads >= 1<<16:
		return nil, logError(path, 32, "%d threads: a log file has 1 to 65535", threads)
	case headWords != pageWords || recWords%pageWords != 0 || threadWords%pageWords != 0 || recWords <= errWords || threadWords <= errWords || recWords > 1<<40 || threadWords > 1<<40:
		return nil, logError(path, 48, "a header whose log sizes (%d, %d and %d words) are not whole pages", headWords, recWords, threadWords)
	case int64(8*(headWords+recWords+threads*threadWords)) > fi.Size():
		return nil, logError(path, 0, "the file is %d bytes, its header says %d", fi.Size(), 8*(headWords+recWords+threads*threadWords))
	}
	g.threads = int(threads)
	for l := 0; l <= g.threads; l++ {
		base, words := int64(headWords), int64(recWords)
		if l > 0 {
			base, words = int64(headWords+recWords)+int64(l-1)*int64(threadWords), int64(threadWords)
		}
		recs, torn, err := g.readLog(f, l, base, words, nonce+uint64(l)*kLog)
		if err != nil {
			return nil, err
		}
		g.logs = append(g.logs, recs)
		if torn != nil {
			g.torn = append(g.torn, *torn)
		}
	}
	return g, nil
}

// logName names a log of a file in messages.
func logName(l int) string {
	if l == 0 {
		return "the recorder's own log"
	}
	return fmt.Sprintf("thread %d's log", l-1)
}

// logWords reads the words of one log of a file, in chunks: the reader
// goes through a log once, word after word.
type logWords struct {
	f     *os.File
	base  int64 // the log's first word in the file
	words int64 // its size
	buf   []byte
	start int64 // the word buf begins with
}

// at is word pos of the log (pos < words).
func (w *logWords) at(pos int64) (uint64, error) {
	if i := pos - w.start; i >= 0 && 8*i+8 <= int64(len(w.buf)) {
		return binary.LittleEndian.Uint64(w.buf[8*i:]), nil
	}
	n := min(w.words-pos, 8<<10) // 64 KiB at a time
	if cap(w.buf) < int(8*n) {
		w.buf = make([]byte, 8*n)
	}
	w.buf, w.start = w.buf[:8*n], pos
	if _, err := w.f.ReadAt(w.buf, 8*(w.base+pos)); err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint64(w.buf), nil
}

// readLog reads log l (words words from word base of f, seed its checks'
// seed): its committed records, and the torn one that ends it, if any.
func (g *genFile) readLog(f *os.File, l int, base, words int64, seed uint64) ([]record, *tornRecord, error) {
	wr := &logWords{f: f, base: base, words: words}
	offset := func(pos int64) int64 { return 8 * (base + pos) }
	damaged := func(pos int64, format string, args ...any) error {
		return logError(g.path, offset(pos), "%s is damaged: %s (did the program write over its logs?)", logName(l), fmt.Sprintf(format, args...))
	}
	// zeros checks that nothing is written from pos on (lookAhead words).
	zeros := func(pos int64) error {
		for i := pos; i < pos+lookAhead && i < words; i++ {
			w, err := wr.at(i)
			if err != nil {
				return err
			}
			if w != 0 {
				return damaged(i, "a word of data where no record was begun")
			}
		}
		return nil
	}
	var recs []record
	var arena []uint64 // the records' words, kept for their payloads
	var pos int64
	for pos < words {
		head, err := wr.at(pos)
		if err != nil {
			return nil, nil, err
		}
		if head == 0 {
			// No record begins here: the log ends.
			return recs, nil, zeros(pos + 1)
		}
		lo := head & 0xFFFFFFFF
		kind, n := lo&0xFF, lo>>8
		size := recordWords(kind, n)
		if head&committed == 0 {
			// Begun, not committed: the kill came while it was written
			// (its first word names its size, unless that word itself is
			// half written). Nothing of it is read as data.
			t := &tornRecord{log: l, off: offset(pos), words: size, kind: kind}
			if size == 0 || pos+size > words {
				t.words, t.kind = 1, 0
			}
			return recs, t, zeros(pos + t.words)
		}
		if size == 0 || pos+size > words {
			return nil, nil, damaged(pos, "a committed record of kind %d and size %d", kind, n)
		}
		at := len(arena)
		arena = append(arena, lo)
		for i := int64(1); i < size; i++ {
			w, err := wr.at(pos + i)
			if err != nil {
				return nil, nil, err
			}
			arena = append(arena, w)
		}
		ws := arena[at:]
		if head>>32&0x7FFFFFFF != checkOf(seed, pos, ws) {
			return nil, nil, damaged(pos, "its record does not check out")
		}
		switch {
		case kind == recError:
		case l == 0 && kind < recError, l > 0 && kind > recRetUnknown:
			return nil, nil, damaged(pos, "a record of kind %d does not belong in %s", kind, logName(l))
		}
		rec := record{kind: kind, n: n, ts: ws[1], payload: ws[2:], off: offset(pos)}
		recs = append(recs, rec)
		pos += size
		if kind == recError {
			// The recorder refused a misuse and stopped this log.
			g.errText, g.errOff, g.errLog = rec.text(), rec.off, l
			return recs, nil, nil
		}
	}
	return recs, nil, nil
}
