package pmem

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"unsafe"

	mmap "github.com/edsrzf/mmap-go"
	"golang.org/x/sys/unix"
)

// AccessKind says what a region access does.
type AccessKind uint8

// The kinds of region access, as reported to an AccessHook.
const (
	AccessLoad AccessKind = iota
	AccessStore
	AccessCAS
	AccessFlush
	AccessFence
	// AccessWait is a step of a wait loop (Worker.Wait): it reads and
	// writes nothing.
	AccessWait
	// AccessVolatile is a step on the target's volatile shared state
	// (Worker.Volatile): it reads and writes nothing in the region; the
	// offset is the target's key for that state.
	AccessVolatile
)

var kindNames = [...]string{"load", "store", "cas", "flush", "fence", "wait", "volatile"}

func (k AccessKind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("AccessKind(%d)", uint8(k))
}

// An AccessHook is called before every region access, with the worker id, the
// kind of access and the word offset (0 for a fence). It runs on the worker's
// goroutine and may block: a deterministic scheduler lets one worker run at a
// time by blocking the others here. If it returns an error, the access is not
// made and the error is returned to the caller; an error that wraps ErrCrashed
// also requests a crash of the whole region (see Region.RequestCrash), so that
// every other worker stops at its next access.
type AccessHook interface {
	Access(worker int, kind AccessKind, off uint64) error
}

// An ExclusiveHook is an AccessHook that runs one worker at a time: from
// the moment its Access returns nil to a worker until that worker's next
// Access call, no other worker's access gets past the hook, and the hook
// hands the region from one worker to the next through Go synchronisation
// (what the race detector sees). The emulated persistence domain then
// updates its lines without their locks (Options.Emulate). A hook that
// gives up on a worker (a watchdog) must not let the region be used by
// anyone else afterwards: that worker may still be making its access.
type ExclusiveHook interface {
	AccessHook
	Exclusive()
}

// A CASHook is an AccessHook that also wants to know, at a CAS, the value
// the CAS expects: a scheduler can then tell when a worker's pending CAS
// would land (the word holds that value again after a change, an ABA) and
// run it right then (package driver's late-write policy). A region calls
// AccessCAS instead of Access before each CAS; it is otherwise the same.
type CASHook interface {
	AccessHook
	AccessCAS(worker int, off, old uint64) error
}

// Errors of region accesses.
var (
	// ErrCrashed is returned by every access once a crash has been requested,
	// until Region.Crash has built the crash image.
	ErrCrashed = errors.New("pmem: region crashed")
	// errClosed is returned by accesses to a closed region.
	errClosed = errors.New("pmem: region closed")
	// errOutOfRange is returned for an offset at or beyond Words().
	errOutOfRange = errors.New("pmem: offset out of range")
)

// Options configure a region.
type Options struct {
	// Emulate turns on the emulated persistence domain: per-line store logs
	// and durable marks, needed for every crash policy but PolicyMax. It
	// costs a lock per store; loads stay lock-free.
	Emulate bool
	// Hook, if not nil, is called before every access (see AccessHook).
	Hook AccessHook
	// HardwareFlush makes Flush execute a real cache-line write-back (CLWB,
	// or CLFLUSHOPT/CLFLUSH where CLWB is missing) on the mapped word and
	// Fence an SFENCE, for regions on DAX-mapped persistent memory. Only on
	// amd64; elsewhere Create, Open and NewMemory refuse it.
	HardwareFlush bool
}

// state bits of a region.
const (
	stCrashing = 1 << iota
	stClosed
)

// A Region is an array of 64-bit words with persistent-memory semantics. See
// the package documentation.
type Region struct {
	words []uint64 // what threads see: the mapping after the header
	n     uint64
	state atomic.Uint32
	hook  atomic.Pointer[hookBox]
	emu   *emulator // nil without Options.Emulate
	hw    bool

	path string // "" for anonymous regions
	file *os.File
	mm   mmap.MMap

	mu      sync.Mutex // guards workers and crash/close
	workers []*Worker
	crashes uint64
}

// hookBox holds the access hook, and the same hook as a CASHook if it is
// one (asserted once, not at every CAS).
type hookBox struct {
	h    AccessHook
	cas  CASHook
	excl bool // an ExclusiveHook
}

func newHookBox(h AccessHook) *hookBox {
	c, _ := h.(CASHook)
	_, excl := h.(ExclusiveHook)
	return &hookBox{h, c, excl}
}

// Create makes a new region file at path holding words zero words, and opens
// it. It refuses to overwrite an existing file.
func Create(path string, words uint64, opts Options) (*Region, error) {
	if words == 0 || words > maxWords {
		return nil, fmt.Errorf("pmem: create %s: %w: %d words (1..%d allowed)", path, errGeometry, words, uint64(maxWords))
	}
	if err := checkOptions(opts); err != nil {
		return nil, fmt.Errorf("pmem: create %s: %w", path, err)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, fmt.Errorf("pmem: create: %w", err)
	}
	fail := func(err error) (*Region, error) {
		f.Close()
		os.Remove(path)
		return nil, fmt.Errorf("pmem: create %s: %w", path, err)
	}
	if err := lockFile(f); err != nil {
		return fail(err)
	}
	h := newHeader(words)
	// The size first, the header last: a file whose creator died before the
	// header landed has no magic and is refused, never taken for a region.
	if err := f.Truncate(h.FileSize()); err != nil {
		return fail(err)
	}
	if _, err := f.WriteAt(h.encode(), 0); err != nil {
		return fail(err)
	}
	if err := f.Sync(); err != nil {
		return fail(err)
	}
	r, err := mapFile(f, path, h, opts)
	if err != nil {
		return fail(err)
	}
	return r, nil
}

// Open opens an existing region file, after checking its header and size.
// The data are taken as they are: what recovery of the data structure on top
// must do is that package's business.
func Open(path string, opts Options) (*Region, error) {
	if err := checkOptions(opts); err != nil {
		return nil, fmt.Errorf("pmem: open %s: %w", path, err)
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return nil, fmt.Errorf("pmem: open: %w", err)
	}
	r, err := openFile(f, path, opts)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("pmem: open %s: %w", path, err)
	}
	return r, nil
}

func openFile(f *os.File, path string, opts Options) (*Region, error) {
	if err := lockFile(f); err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%w: not a regular file", errBadMagic)
	}
	buf := make([]byte, min(st.Size(), HeaderSize))
	if _, err := io.ReadFull(f, buf); err != nil {
		return nil, err
	}
	h, err := parseHeader(buf)
	if err != nil {
		return nil, err
	}
	if st.Size() < h.FileSize() {
		return nil, fmt.Errorf("%w: %d bytes, the header says %d", errTruncated, st.Size(), h.FileSize())
	}
	if st.Size() > h.FileSize() {
		return nil, fmt.Errorf("%w: %d bytes, the header says %d", errSize, st.Size(), h.FileSize())
	}
	return mapFile(f, path, h, opts)
}

// readHeader reads and checks the header of a region file without opening
// (or locking) the region.
func readHeader(path string) (fileHeader, error) {
	f, err := os.Open(path)
	if err != nil {
		return fileHeader{}, fmt.Errorf("pmem: %w", err)
	}
	defer f.Close()
	buf := make([]byte, HeaderSize)
	n, err := io.ReadFull(f, buf)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return fileHeader{}, fmt.Errorf("pmem: %s: %w", path, err)
	}
	h, err := parseHeader(buf[:n])
	if err != nil {
		return fileHeader{}, fmt.Errorf("pmem: %s: %w", path, err)
	}
	return h, nil
}

func lockFile(f *os.File) error {
	err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
	if errors.Is(err, unix.EWOULDBLOCK) {
		return errLocked
	}
	return err
}

func mapFile(f *os.File, path string, h fileHeader, opts Options) (*Region, error) {
	mm, err := mmap.Map(f, mmap.RDWR, 0)
	if err != nil {
		return nil, fmt.Errorf("mmap: %w", err)
	}
	if int64(len(mm)) != h.FileSize() {
		mm.Unmap()
		return nil, fmt.Errorf("%w: mapped %d bytes, want %d", errSize, len(mm), h.FileSize())
	}
	// Accesses to a persistent index are scattered; read-ahead only wastes
	// page-cache. Advice is a hint: its failure is not an error.
	_ = unix.Madvise(mm, unix.MADV_RANDOM)
	r := newRegion(mm, h.Words, opts)
	r.path, r.file = path, f
	return r, nil
}

// NewMemory makes a region of words zero words in anonymous memory, with no
// file: for tests, fuzzing and crash images.
func NewMemory(words uint64, opts Options) (*Region, error) {
	if words == 0 || words > maxWords {
		return nil, fmt.Errorf("pmem: %w: %d words (1..%d allowed)", errGeometry, words, uint64(maxWords))
	}
	if err := checkOptions(opts); err != nil {
		return nil, fmt.Errorf("pmem: %w", err)
	}
	// A header-sized gap keeps the layout identical to a file mapping. The
	// length is rounded up to whole pages, which the kernel maps anyway:
	// Renew can then make a larger region of the same memory.
	size := HeaderSize + int(words)*wordBytes
	page := os.Getpagesize()
	size = (size + page - 1) / page * page
	mm, err := mmap.MapRegion(nil, size, mmap.RDWR, mmap.ANON, 0)
	if err != nil {
		return nil, fmt.Errorf("pmem: anonymous mapping: %w", err)
	}
	return newRegion(mm, words, opts), nil
}

func checkOptions(opts Options) error {
	if opts.HardwareFlush && !hwFlushSupported {
		return errors.New("hardware flush is not supported on this architecture")
	}
	return nil
}

func newRegion(mm mmap.MMap, words uint64, opts Options) *Region {
	r := &Region{mm: mm, n: words, hw: opts.HardwareFlush}
	// The mapping is page-aligned, so every word is 8-byte aligned, as the
	// atomic operations need, and every line 64-byte aligned.
	r.words = unsafe.Slice((*uint64)(unsafe.Pointer(&mm[HeaderSize])), words)
	if opts.Hook != nil {
		r.SetHook(opts.Hook)
	}
	if opts.Emulate {
		r.emu = newEmulator(r.words)
	}
	return r
}

// Words is the number of words in the region.
func (r *Region) Words() uint64 { return r.n }

// Peek is the value threads see in word off (0 past the end), read
// without an access: the hook is not called and nothing is counted. A
// scheduler uses it to decide when to run a worker it holds back (package
// driver's late-write policy); a target must not.
func (r *Region) Peek(off uint64) uint64 {
	if off >= uint64(len(r.words)) { // r.n, open; the index needs no other check
		return 0
	}
	return atomic.LoadUint64(&r.words[off])
}

// Path is the file backing the region, or "" for an anonymous region.
func (r *Region) Path() string { return r.path }

// isEmulated tells whether the emulated persistence domain is on.
func (r *Region) isEmulated() bool { return r.emu != nil }

// SetHook installs (or with nil removes) the access hook. It must not be
// called while workers access the region.
func (r *Region) SetHook(h AccessHook) {
	if h == nil {
		r.hook.Store(nil)
		return
	}
	r.hook.Store(newHookBox(h))
}

// Worker returns the handle through which worker id (>= 0) accesses the
// region; the same id always gets the same handle.
func (r *Region) Worker(id int) *Worker {
	if id < 0 {
		panic(fmt.Sprintf("pmem: negative worker id %d", id))
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for len(r.workers) <= id {
		r.workers = append(r.workers, nil)
	}
	if r.workers[id] == nil {
		r.workers[id] = &Worker{r: r, id: id}
	}
	return r.workers[id]
}

// syncFile writes the mapped file back to its storage (msync). A no-op for an
// anonymous region.
func (r *Region) syncFile() error {
	if r.file == nil || r.state.Load()&stClosed != 0 {
		return nil
	}
	if err := unix.Msync(r.mm, unix.MS_SYNC); err != nil {
		return fmt.Errorf("pmem: msync %s: %w", r.path, err)
	}
	return nil
}

// Close syncs and unmaps the region and releases its file. No worker may be
// accessing the region.
func (r *Region) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.state.Load()&stClosed != 0 {
		return nil
	}
	err := r.syncFile()
	r.state.Or(stClosed)
	r.words = nil
	if e := r.mm.Unmap(); e != nil && err == nil {
		err = fmt.Errorf("pmem: unmap: %w", e)
	}
	if r.file != nil {
		// Closing the descriptor releases the flock.
		if e := r.file.Close(); e != nil && err == nil {
			err = fmt.Errorf("pmem: close %s: %w", r.path, e)
		}
	}
	return err
}

// RequestCrash starts a crash: from now on every access of every worker
// returns ErrCrashed, until Crash builds the image.
func (r *Region) RequestCrash() { r.state.Or(stCrashing) }

// Crashing tells whether a crash has been requested and not yet carried out.
func (r *Region) Crashing() bool { return r.state.Load()&stCrashing != 0 }

// crashCount is the number of crashes carried out on this region by Crash.
func (r *Region) crashCount() uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.crashes
}

// access runs the common prologue of every access: the hook, then the crash
// and close check, then the range check. excl: the hook is an
// ExclusiveHook (the access is the only one under way). Worker's Load,
// Store, CAS, Flush and Fence write it out (see there); a CAS tells a
// CASHook the value it expects.
func (r *Region) access(w int, kind AccessKind, off uint64) (excl bool, err error) {
	if hb := r.hook.Load(); hb != nil {
		if err := hb.h.Access(w, kind, off); err != nil {
			return false, r.hookFailed(err)
		}
		excl = hb.excl
	}
	if !r.accessOK(kind, off) {
		return false, r.accessError(kind, off)
	}
	return excl, nil
}

// hookFailed is the error of an access whose hook returned err: one that
// wraps ErrCrashed also requests a crash.
func (r *Region) hookFailed(err error) error {
	if errors.Is(err, ErrCrashed) {
		r.RequestCrash()
	}
	return err
}

// accessOK is the rest of an access's prologue, after the hook: no crash
// requested, the region open, the offset in range. It is inlined into
// every access (a call to a checker that also made the error was 2 % of a
// fuzz run's instructions); accessError makes the error. It bounds off by
// the length of words (r.n while the region is open): the access that
// follows indexes words, and the compiler then drops its bounds check.
func (r *Region) accessOK(kind AccessKind, off uint64) bool {
	return r.state.Load() == 0 && (off < uint64(len(r.words)) || kind >= AccessFence)
}

// accessError is the error of an access that accessOK refuses.
func (r *Region) accessError(kind AccessKind, off uint64) error {
	if s := r.state.Load(); s != 0 {
		if s&stClosed != 0 {
			return errClosed
		}
		return ErrCrashed
	}
	if off >= r.n && kind < AccessFence {
		return fmt.Errorf("%w: word %d of %d", errOutOfRange, off, r.n)
	}
	return nil
}
