package pmem

import (
	"encoding/binary"
	"fmt"
	"sync/atomic"
)

// This file is the restart path: what a new process finds after the one that
// used a region died. An emulated crash (Crash) leaves the crash image in the
// same Region object, with the same workers and the same mapping; code that
// recovers through that object never runs the checks a new process makes
// when it maps the file again. Image, OpenImage and Reopen make those checks.

// Image returns the region's contents as the bytes of a region file: the
// header Create writes, then every word as threads see it, in the machine's
// byte order (a region file is a mapping of the words). After Crash these are
// the crash image. No worker may be storing. Write the bytes to a file to
// keep a crash image as evidence: Open opens that file.
func (r *Region) Image() ([]byte, error) {
	if r.state.Load()&stClosed != 0 {
		return nil, errClosed
	}
	h := newHeader(r.n)
	b := make([]byte, h.FileSize())
	copy(b, h.encode())
	data := b[HeaderSize:]
	for i := range r.n {
		binary.NativeEndian.PutUint64(data[i*wordBytes:], atomic.LoadUint64(&r.words[i]))
	}
	return b, nil
}

// OpenImage opens the bytes of a region file (what Image returns, or what a
// region file holds) as a new anonymous region, after the checks Open makes
// of a file: the header (magic, checksum, version, geometry), then the size.
// The bytes are copied. The new region has no worker, no pending flush and
// no crash state; with Options.Emulate every word starts durable. Its
// errors name what is wrong, as Open's do.
func OpenImage(b []byte, opts Options) (*Region, error) {
	if err := checkOptions(opts); err != nil {
		return nil, fmt.Errorf("pmem: open image: %w", err)
	}
	h, err := parseHeader(b[:min(len(b), HeaderSize)])
	if err != nil {
		return nil, fmt.Errorf("pmem: open image: %w", err)
	}
	if size := int64(len(b)); size != h.FileSize() {
		kind := errSize
		if size < h.FileSize() {
			kind = errTruncated
		}
		return nil, fmt.Errorf("pmem: open image: %w: %d bytes, the header says %d", kind, size, h.FileSize())
	}
	words := make([]uint64, h.Words)
	for i := range words {
		words[i] = binary.NativeEndian.Uint64(b[HeaderSize+i*wordBytes:])
	}
	return newFromWords(words, opts)
}

// Reopen closes r and opens its contents again as a new process would after
// a restart, with the given options (a new access hook, emulation on or
// off): a file-backed region is closed (msync, unlock) and its file opened
// with Open, which checks its header; an anonymous one, which has no
// header (Image makes one when its bytes go to a file, and OpenImage
// checks it), hands its memory over to the new region. Either way nothing
// of r's volatile state survives: no worker handle, no pending flush, no
// store log. Call it after Crash (the new region holds the crash image) or
// after a clean stop (it holds what threads saw, as PolicyMax would keep).
// It refuses a region whose crash was requested and not yet carried out.
// Handles on r, such as a data structure built on it, are dead afterwards
// (their accesses fail: the region is closed): open the structure again on the
// new region.
func (r *Region) Reopen(opts Options) (*Region, error) {
	if r.Crashing() {
		return nil, fmt.Errorf("pmem: reopen: %w: the crash was requested and not carried out (call Crash first)", ErrCrashed)
	}
	if r.path != "" {
		path := r.path
		if err := r.Close(); err != nil {
			return nil, err
		}
		return Open(path, opts)
	}
	if err := checkOptions(opts); err != nil {
		return nil, fmt.Errorf("pmem: reopen: %w", err)
	}
	// Handing the mapping over spares an unmap, a map and two copies per
	// restart: the harness reopens after every crash.
	nr, err := r.handOver(r.n, opts, false)
	if err != nil {
		return nil, fmt.Errorf("pmem: reopen: %w", err)
	}
	return nr, nil
}

// Renew closes the anonymous region r and makes of its memory a new region
// of words zero words, as NewMemory(words, opts) would: nothing of r
// survives (no word, worker, pending flush or store log), and handles on r
// are dead afterwards. words may differ from r's, within the pages r maps.
// A harness that makes a region per run renews the last one instead: an
// unmap costs a TLB shootdown on every core the process ran on, and fresh
// pages fault in again, each run. It fails if r is file-backed, closed,
// or too small (then make a new region with NewMemory, and close r).
func (r *Region) Renew(words uint64, opts Options) (*Region, error) {
	if words == 0 || words > maxWords {
		return nil, fmt.Errorf("pmem: renew: %w: %d words (1..%d allowed)", errGeometry, words, uint64(maxWords))
	}
	if err := checkOptions(opts); err != nil {
		return nil, fmt.Errorf("pmem: renew: %w", err)
	}
	if r.path != "" {
		return nil, fmt.Errorf("pmem: renew %s: not an anonymous region", r.path)
	}
	nr, err := r.handOver(words, opts, true)
	if err != nil {
		return nil, fmt.Errorf("pmem: renew: %w", err)
	}
	return nr, nil
}

// handOver closes the anonymous region r and hands its mapping over to a
// new region of words words, zeroed if zero is set (else they hold r's
// contents), with r's emulator reset for it if opts.Emulate.
func (r *Region) handOver(words uint64, opts Options, zero bool) (*Region, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.state.Load()&stClosed != 0 {
		return nil, errClosed
	}
	if need := HeaderSize + int(words)*wordBytes; need > len(r.mm) {
		return nil, fmt.Errorf("%w: %d words need %d bytes, the region maps %d", errSize, words, need, len(r.mm))
	}
	r.state.Or(stClosed)
	mm, emu := r.mm, r.emu
	r.words, r.mm, r.emu = nil, nil, nil
	emulate := opts.Emulate
	opts.Emulate = false // the emulator is taken over below
	nr := newRegion(mm, words, opts)
	if zero {
		clear(nr.words)
	}
	nr.workers = newHandles(nr, r.workers)
	if emulate {
		if emu != nil && emu.resize(nr.words) {
			emu.reset(nr.words) // as new, without allocating
		} else {
			emu = newEmulator(nr.words)
		}
		nr.emu = emu
	}
	return nr, nil
}

// newHandles are the worker handles of region nr for the ids that old
// (the handles of the region it replaces) has, made at once in one array,
// each with the list of pending flushes of the old one, emptied: the
// harness reopens a region after every crash, and the same workers
// access it again (a handle made per worker and its list grown again
// were a few thousand allocations a fuzz run). The old handles keep no
// list; they are dead (their region is closed).
func newHandles(nr *Region, old []*Worker) []*Worker {
	if len(old) == 0 {
		return nil
	}
	out := make([]*Worker, len(old))
	hs := make([]Worker, len(old))
	for i, w := range old {
		if w != nil {
			hs[i] = Worker{r: nr, id: i, pending: w.pending[:0]}
			w.pending = nil
			out[i] = &hs[i]
		}
	}
	return out
}
