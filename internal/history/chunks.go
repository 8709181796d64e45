package history

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"sync"
)

// Parallel decoding. A feeder cuts the input into chunks of whole lines;
// workers decode each chunk's plain event lines with the fast paths
// (decodeText, decodeJSON), which depend on the bytes alone; the Reader
// then takes the chunks in file order and applies each line to its state
// exactly as it applies a line it reads itself (applyFast, or the general
// path for a line no fast path decoded). Every rule of the format, every
// error message and every line number therefore comes from the same code
// in the same order as without workers: the first error in the file wins.

// chunkBytes is the usual size of a chunk; one grows to hold a longer line
// (up to the line limit).
const chunkBytes = 512 << 10

// chunk is a piece of the input that holds whole lines, and what a worker
// decoded of it.
type chunk struct {
	buf []byte
	// eof: the input ends after buf (whose last line may lack a newline);
	// long: buf is the start of a line longer than the limit; err: the
	// read error met after buf's lines (a partial line is dropped).
	eof, long bool
	// partial: the input ends in buf's last line, which has no newline.
	partial bool
	err     error
	done    chan struct{} // closed when decoded

	recs    []chunkRec
	nums    []uint64
	lines   int64 // lines in buf
	scratch Event // for decodeJSON
}

// chunkRec is a line that is not blank: decoded by a fast path (kind set)
// or not (fastNone: the general path parses it), or over the length
// limit.
type chunkRec struct {
	fastRec
	line       int32 // within the chunk, from 1
	start, end int32 // the line in buf, without its terminator
	tooLong    bool
}

// pipeline is the feeder and workers of a parallel Reader.
type pipeline struct {
	workers int
	chunk   int // chunk size (tests make it small)
	src     io.Reader
	maxLine int

	ordered chan *chunk // chunks in file order, for the Reader
	work    chan *chunk // chunks to decode, for the workers
	free    chan *chunk // chunks to reuse (bounding the memory in flight)
	quit    chan struct{}
	stop    sync.Once

	cur  *chunk
	next int   // the next record of cur
	base int64 // lines before cur
	// bytes are the bytes of the chunks before cur (Reader.Offset).
	bytes int64
}

// Parallel makes the Reader decode its input in chunks on up to workers
// goroutines (workers <= 1: it stays sequential, as it does when Next was
// already called, and a Reader of a Recording, which decodes nothing). The events and errors, with their lines and columns,
// are those of a sequential Reader. The returned function stops the
// goroutines, which otherwise run until the end of the input or the first
// error: call it when done reading (a deferred call will do).
func (r *Reader) Parallel(workers int) (stop func()) {
	if workers <= 1 || r.sniffed || r.par != nil || r.rec != nil {
		return func() {}
	}
	size := chunkBytes
	if n, ok := inMemory(r.in); ok {
		// No chunk holds more than the whole history (and its end):
		// shrink and the differential tests check thousands of small
		// ones, and clearing the full chunks was most of their time.
		size = min(size, n+1)
	}
	r.par = &pipeline{workers: workers, chunk: size, src: &drained{br: r.br, in: r.in}, maxLine: r.opts.MaxLineBytes}
	return r.par.halt
}

// drained reads what br holds (the bytes the Reader looked at first, and
// an error br met), then in, the input under br, directly: going through
// br would copy every chunk once more (its buffer is larger than a chunk,
// so it never reads into the chunk itself), a tenth of the feeder's time.
type drained struct {
	br *bufio.Reader
	in io.Reader
}

func (d *drained) Read(p []byte) (int, error) {
	if d.br != nil {
		if d.br.Buffered() > 0 || len(p) == 0 {
			return d.br.Read(p)
		}
		_, err := d.br.Read(nil) // the error br holds, if any
		d.br = nil
		if err != nil {
			return 0, err
		}
	}
	return d.in.Read(p)
}

// start launches the feeder and the workers.
func (p *pipeline) start() {
	n := 2*p.workers + 2
	p.ordered = make(chan *chunk, n)
	p.work = make(chan *chunk, n)
	p.free = make(chan *chunk, n)
	p.quit = make(chan struct{})
	for k := 0; k < n; k++ {
		p.free <- &chunk{buf: make([]byte, 0, p.chunk)}
	}
	go p.feed()
	for k := 0; k < p.workers; k++ {
		go func() {
			for c := range p.work {
				c.decode(p.maxLine)
				close(c.done)
			}
		}()
	}
}

// halt stops the feeder and the workers (idempotent).
func (p *pipeline) halt() {
	p.stop.Do(func() {
		if p.quit != nil {
			close(p.quit)
		}
	})
}

// feed cuts the input into chunks of whole lines, in order, until the end
// of the input, an error, or halt.
func (p *pipeline) feed() {
	defer close(p.work)
	defer close(p.ordered)
	var carry []byte // the start of a line, read with the previous chunk
	for {
		var c *chunk
		select {
		case c = <-p.free:
		case <-p.quit:
			return
		}
		c.buf = append(c.buf[:0], carry...)
		c.eof, c.long, c.partial, c.err = false, false, false, nil
		last := p.fill(c)
		switch {
		case c.err == io.EOF:
			c.eof, c.err, carry = true, nil, nil
			c.partial = len(c.buf) > 0 && c.buf[len(c.buf)-1] != '\n'
		case c.err != nil:
			// The partial line after the last newline is dropped, as a
			// sequential Reader drops it; one already too long for the
			// limit is reported as such, as it would be.
			partial := c.buf[last:]
			c.buf = c.buf[:last]
			if len(partial) > p.maxLine+1 {
				c.long, c.err = true, nil
			}
		case last == 0:
			c.long = true
		default:
			carry = append(carry[:0], c.buf[last:]...)
			c.buf = c.buf[:last]
		}
		c.done = make(chan struct{})
		select {
		case p.ordered <- c:
		case <-p.quit:
			return
		}
		p.work <- c // never blocks: it has room for every chunk
		if c.eof || c.long || c.err != nil {
			return
		}
	}
}

// fill reads into c.buf until it is full (grown, if it holds no newline,
// up to what a line of the limit needs) or the input ends or fails, which
// it records in c.err. It returns the end of the last whole line in
// c.buf (0 if none).
func (p *pipeline) fill(c *chunk) int {
	for {
		for len(c.buf) < cap(c.buf) {
			n, err := p.src.Read(c.buf[len(c.buf):cap(c.buf)])
			c.buf = c.buf[:len(c.buf)+n]
			if err != nil {
				c.err = err
				return bytes.LastIndexByte(c.buf, '\n') + 1
			}
		}
		if last := bytes.LastIndexByte(c.buf, '\n') + 1; last > 0 || cap(c.buf) > p.maxLine+2 {
			return last
		}
		// A line longer than the chunk but maybe not than the limit.
		grown := make([]byte, len(c.buf), min(2*cap(c.buf), p.maxLine+3))
		copy(grown, c.buf)
		c.buf = grown
	}
}

// decode finds the lines of c.buf and decodes those the fast paths take.
func (c *chunk) decode(maxLine int) {
	b := c.buf
	if cap(c.recs) == 0 {
		// Sized for what a chunk of common lines holds (about 30 bytes
		// a line, 6 bytes a number): growing them from nothing copied
		// them a dozen times per chunk, 2.6 % of a 1M-operation check.
		c.recs = make([]chunkRec, 0, len(b)/32+1)
		c.nums = make([]uint64, 0, len(b)/8+1)
	}
	c.recs, c.nums = c.recs[:0], c.nums[:0]
	line := int32(0)
	for pos := 0; pos < len(b); {
		line++
		if d := b[pos]; '0' <= d && d <= '9' {
			// Decoded in place (a record built aside and appended was
			// copied twice per line) and where it starts: the decoder
			// finds its end.
			// The record is set in place: decodeTextAt sets every field
			// of fastRec, the end is set below (an append of a whole
			// record cleared and copied it, a third of this loop).
			n := len(c.recs)
			if n == cap(c.recs) {
				c.recs = append(c.recs, chunkRec{})
			}
			c.recs = c.recs[:n+1]
			rec := &c.recs[n]
			rec.line, rec.start, rec.tooLong = line, int32(pos), false
			var end int
			if c.nums, end = decodeTextAt(b, pos, &rec.fastRec, c.nums); end >= 0 {
				if end-pos > maxLine {
					*rec = chunkRec{line: line, start: int32(pos), end: int32(end), tooLong: true}
					c.lines = int64(line)
					return // nothing after it is read
				}
				rec.end = int32(end)
				pos = end + 1 // past its newline
				if end < len(b) && b[end] == '\r' {
					pos++ // a "\r\n"
				}
				continue
			}
			c.recs = c.recs[:len(c.recs)-1]
		}
		end, next := len(b), len(b)
		if i := bytes.IndexByte(b[pos:], '\n'); i >= 0 {
			end, next = pos+i, pos+i+1
			if end > pos && b[end-1] == '\r' {
				end--
			}
		}
		raw := b[pos:end]
		start := pos
		pos = next
		switch {
		case len(raw) > maxLine:
			c.recs = append(c.recs, chunkRec{line: line, start: int32(start), end: int32(end), tooLong: true})
			c.lines = int64(line)
			return // nothing after it is read
		case len(raw) == 0:
			continue
		}
		c.recs = append(c.recs, chunkRec{line: line, start: int32(start), end: int32(end)})
		rec := &c.recs[len(c.recs)-1]
		switch {
		case '0' <= raw[0] && raw[0] <= '9':
			rec.kind = fastNone // (decodeTextAt rejected it above)
		case raw[0] == '{':
			var ok bool
			if c.nums, ok = decodeJSON(raw, &rec.fastRec, c.nums, &c.scratch); !ok {
				rec.kind = fastNone
			}
		}
	}
	if c.long {
		// The line at the start of buf has no end within the limit.
		c.recs = append(c.recs, chunkRec{line: line + 1, tooLong: true})
	}
	c.lines = int64(line)
}

// errStopped: the Reader's goroutines were stopped before the end of the
// input.
var errStopped = errors.New("history: the Reader was stopped")

// nextDecoded applies the next line of the current chunk if a worker
// decoded it and it applies as decoded, as nextLine and fast would (most
// lines): without their steps, which cost as much as applying the line.
// Otherwise ok is false and nothing is consumed. (r.raw is left as it is:
// it serves the columns of errors, and applying names none.)
func (r *Reader) nextDecoded() (ev *Event, ok bool, err error) {
	p := r.par
	c := p.cur
	if c == nil || p.next >= len(c.recs) || r.noFast {
		return nil, false, nil
	}
	rec := &c.recs[p.next]
	if rec.kind == fastNone || rec.syn != r.format { // (as is a line too long)
		return nil, false, nil
	}
	if c.partial && p.next == len(c.recs)-1 && r.promise != 0 {
		return nil, false, nil // a recording cut in this line: nextLine says so
	}
	prev := r.line
	r.line = p.base + int64(rec.line)
	if ev, ok, err = r.applyFast(&rec.fastRec, c.nums); !ok {
		r.line = prev // (applyFast changed nothing)
		return nil, false, nil
	}
	p.next++
	if err == nil {
		r.events++
	}
	return ev, true, err
}

// nextLine is readLine for a parallel Reader: the next line that is not
// blank, with what a worker decoded of it (nil when the line is too long,
// after r.fail). At the end of the input it returns io.EOF.
func (r *Reader) nextLine() ([]byte, *chunkRec, error) {
	p := r.par
	for {
		if p.cur == nil {
			c, ok := <-p.ordered
			if !ok {
				return nil, nil, errStopped
			}
			select {
			case <-c.done:
			case <-p.quit:
				return nil, nil, errStopped
			}
			p.cur, p.next = c, 0
		}
		c := p.cur
		if p.next < len(c.recs) {
			rec := &c.recs[p.next]
			p.next++
			r.line = p.base + int64(rec.line)
			if rec.tooLong {
				r.raw = nil
				return nil, nil, r.fail(ErrLimit, nil, "line longer than %d bytes (binary data or a missing newline?)", r.opts.MaxLineBytes)
			}
			r.raw = c.buf[rec.start:rec.end]
			r.noEOL = c.partial && p.next == len(c.recs)
			return r.raw, rec, nil
		}
		p.base += c.lines
		p.bytes += int64(len(c.buf))
		r.line = p.base
		p.cur = nil
		switch {
		case c.err != nil:
			r.raw = nil
			return nil, nil, &Error{File: r.name, Line: r.line + 1, Err: c.err, Msg: "read error: " + c.err.Error()}
		case c.eof:
			return nil, nil, io.EOF
		}
		p.free <- c
	}
}
