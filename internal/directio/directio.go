// Package directio writes a file with direct I/O (Linux O_DIRECT): the
// data goes from the process's buffer to the disk, not through the page
// cache. Writing a history of hundreds of megabytes through the page
// cache costs the writer a copy and page allocation for every byte (and
// the kernel's writeback, later, some more); with direct I/O it costs a
// system call per few megabytes. Where the file system refuses direct I/O
// (tmpfs, some network file systems), the file is written as usual. Where
// the kernel has io_uring, the full buffers are written through it, so
// that waiting for the disk does not hold one of the process's Ps (see
// ring).
package directio

import (
	"errors"
	"io"
	"os"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// align is the alignment direct I/O asks of buffers, offsets and lengths
// (the logical block size; 4096 covers every common disk).
const align = 4096

// bufSize is the size of a buffer, the most one write takes (a multiple
// of hugePage). A buffer takes five of the driver's dumped chunks (a
// little more than a MiB each) and is handed over when the next does not
// fit (handOffAligned): a write per 5 MiB. Buffers of 4 MiB took three and
// a split one, or, handed over early, a write per 3 MiB, whose system time
// (about 200 µs a write here) was a third more (BenchmarkDumpCopy).
const bufSize = 6 << 20

// buffers is the number of buffers: one filling, the others written (or
// waiting to be) by the writing goroutine. The recorder's dumper (internal/record) hands over
// up to about 10 MB at the end of a segment with 8 workers; with room for
// it, the workers of the next segment do not wait for the disk.
const buffers = 4

// File is a file being written, sequentially, from the start.
type File struct {
	f      *os.File
	direct bool
	buf    []byte // aligned; len(buf) bytes are pending
	err    error
	bg     *background // writes full buffers; nil before the first
	// ring writes the full buffers where io_uring is there (see ring);
	// off is the bytes written so far. While the ring writes, the file's
	// own offset stays where it was (at 0); it is moved to off when the
	// ring stops.
	ring   *ring
	off    int64
	noRing bool // plain writes even where io_uring is there (a benchmark's)
	// maps are the mappings of the buffers on huge pages (see
	// hugeBuffer), unmapped by Close (or, if it is never called, once
	// the File is unreachable: unmap's cleanup).
	maps   *mappings
	unmap  runtime.Cleanup
	noHuge bool // buffers on the heap only (a benchmark's)
}

// Create creates (or truncates) the file at path, with perm, for writing
// with direct I/O where the file system allows it.
func Create(path string, perm os.FileMode) (*File, error) {
	return open(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, perm)
}

// CreateExcl is Create that fails if the file exists.
func CreateExcl(path string, perm os.FileMode) (*File, error) {
	return open(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
}

func open(path string, flags int, perm os.FileMode) (*File, error) {
	f, err := os.OpenFile(path, flags|unix.O_DIRECT, perm)
	direct := err == nil
	if errors.Is(err, unix.EINVAL) {
		f, err = os.OpenFile(path, flags, perm)
	}
	if err != nil {
		return nil, err
	}
	return &File{f: f, direct: direct, buf: alignedBuffer(bufSize)[:0]}, nil
}

// alignedBuffer returns n bytes whose address is a multiple of align.
func alignedBuffer(n int) []byte {
	b := make([]byte, n+align)
	off := (align - int(uintptr(unsafe.Pointer(&b[0]))%align)) % align
	return b[off : off+n : off+n]
}

// hugeBuffer returns n bytes (a multiple of hugePage) mapped on their own,
// aligned to a huge page and advised to be backed by huge pages (Linux
// transparent huge pages), and the mapping to unmap when done; nil where
// that cannot be had. A direct write pins the pages of its buffer and
// hands the disk a segment per run of contiguous memory: with pages of
// 4 KiB a buffer of 4 MiB is 1024 pins and segments, several requests
// (a virtio disk takes 254 segments each). With huge pages the system
// time of the writes was about half here (BenchmarkWriteCPU).
func hugeBuffer(n int) (buf, mapping []byte) {
	m, err := unix.Mmap(-1, 0, n+hugePage, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return nil, nil
	}
	off := (hugePage - int(uintptr(unsafe.Pointer(&m[0]))%hugePage)) % hugePage
	buf = m[off : off+n : off+n]
	if unix.Madvise(buf, unix.MADV_HUGEPAGE) != nil {
		unix.Munmap(m)
		return nil, nil
	}
	return buf, m
}

// hugePage is the size of a huge page (x86-64, arm64 with 4 KiB pages).
const hugePage = 2 << 20

// newBuffer returns a buffer for the writing goroutine: on huge pages
// where it can (hugeBuffer), else on the heap.
func (f *File) newBuffer() []byte {
	if !f.noHuge {
		if b, m := hugeBuffer(bufSize); b != nil {
			if f.maps == nil {
				f.maps = &mappings{}
				f.unmap = runtime.AddCleanup(f, (*mappings).release, f.maps)
			}
			f.maps.regions = append(f.maps.regions, m)
			return b
		}
	}
	return alignedBuffer(bufSize)
}

// mappings are a File's buffers mapped on their own.
type mappings struct{ regions [][]byte }

// release unmaps them: no write may be in flight from them.
func (m *mappings) release() {
	for _, r := range m.regions {
		unix.Munmap(r)
	}
	m.regions = nil
}

// Name is the file's name.
func (f *File) Name() string { return f.f.Name() }

// Direct reports whether the file is written with direct I/O (call it
// after Close, or before the first full buffer: the writing goroutine may
// turn it off).
func (f *File) Direct() bool { return f.direct }

// Write buffers p. A buffer, once full, goes to a goroutine that writes it
// while the next one fills: with direct I/O a write waits for the disk
// (4-50 ms a buffer here), and the caller (the recorder's dumper, internal/record, whose
// lag the workers wait for at the end of every segment) should not; nor
// should the P that goroutine runs on (see ring). Write
// waits only when every buffer is full (see buffers). An error of the
// writing goroutine is Write's from the next full buffer on, and Close's.
func (f *File) Write(p []byte) (int, error) {
	n := 0
	if len(p) >= bigCopy && len(p) > cap(f.buf)-len(f.buf) && len(p)+align <= cap(f.buf) && len(f.buf) >= align {
		f.handOffAligned()
	}
	for len(p) > 0 && f.err == nil {
		c := copy(f.buf[len(f.buf):cap(f.buf)], p)
		f.buf = f.buf[:len(f.buf)+c]
		p, n = p[c:], n+c
		if len(f.buf) == cap(f.buf) {
			f.handOff()
		}
	}
	return n, f.err
}

// bigCopy is the size from which the runtime's memmove copies with
// non-temporal stores (amd64, where REP MOVSB is not preferred: AMD): they
// neither read the destination's lines first nor evict the caches' for
// them.
const bigCopy = 1 << 20

// handOffAligned hands the buffer's whole blocks to the writing goroutine
// before it is full, and carries the rest (less than a block) over to the
// next buffer: so that a large write that does not fit the room left
// (the recorder's dumper writes chunks of a little more than bigCopy) is
// copied whole, in one memmove with non-temporal stores, rather than
// split into two smaller copies with ordinary ones, whose cold
// destination lines are read from memory first (a quarter of the bytes
// with buffers of four chunks). Direct I/O takes any multiple of align.
func (f *File) handOffAligned() {
	whole := len(f.buf) / align * align
	var rest [align]byte
	r := copy(rest[:], f.buf[whole:])
	f.buf = f.buf[:whole]
	f.handOff()
	f.buf = append(f.buf, rest[:r]...)
}

// written is a buffer back from the writing goroutine, with its first
// error so far.
type written struct {
	buf []byte
	err error
}

// background is the goroutine that writes full buffers.
type background struct {
	full chan []byte
	free chan written
	done chan struct{}
}

// handOff hands the full buffer to the writing goroutine (started at the
// first) and takes the other one.
func (f *File) handOff() {
	if f.bg == nil {
		f.bg = &background{full: make(chan []byte, buffers), free: make(chan written, buffers), done: make(chan struct{})}
		for range buffers - 1 {
			f.bg.free <- written{buf: f.newBuffer()[:0]}
		}
		if f.maps != nil {
			// The first buffer (on the heap: most files never fill one)
			// gives way to one like the others, once per large file.
			f.buf = append(f.newBuffer()[:0], f.buf...)
		}
		if f.direct && !f.noRing {
			// Only files of more than a buffer get a ring: most
			// histories of a fuzz campaign are a few kilobytes.
			f.ring, _ = newRing()
		}
		go f.writeBackground()
	}
	f.bg.full <- f.buf
	w := <-f.bg.free
	f.buf = w.buf
	if w.err != nil {
		f.err = w.err
	}
}

// writeBackground writes the buffers handed over until Close; after an
// error it writes no more (the file would have a hole), and returns each
// buffer with the error. It alone touches f.f and f.direct while it runs.
func (f *File) writeBackground() {
	defer close(f.bg.done)
	var err error
	for b := range f.bg.full {
		if err == nil {
			err = f.writeFull(b)
		}
		f.bg.free <- written{buf: b[:0], err: err}
	}
}

// writeFull writes a full buffer: through the ring, if there is one.
func (f *File) writeFull(b []byte) error {
	if f.ring != nil {
		err := f.ring.write(int(f.f.Fd()), b, f.off)
		if err == nil {
			f.off += int64(len(b))
			return nil
		}
		if !errors.Is(err, unix.EINVAL) {
			return err
		}
		// Refused (direct I/O at write, as below, or the ring's write
		// itself): plain writes from here on.
		if err := f.stopRing(); err != nil {
			return err
		}
	}
	return f.write(b)
}

// stopRing closes the ring, if any, and moves the file's offset to the
// end of what it wrote, for the plain writes after it.
func (f *File) stopRing() error {
	if f.ring == nil {
		return nil
	}
	f.ring.close()
	f.ring = nil
	_, err := f.f.Seek(f.off, io.SeekStart)
	return err
}

// Drain waits until every full buffer handed over so far is written (not
// the one filling, which stays for later writes), and returns the first
// error of the writes. A benchmark calls it so that what it measures
// ends with its disk writes, rather than leaving them to run beside what
// it measures next.
func (f *File) Drain() error {
	if f.bg != nil {
		// Every buffer but the one filling is back once written.
		back := make([]written, 0, buffers-1)
		for range buffers - 1 {
			w := <-f.bg.free
			if w.err != nil && f.err == nil {
				f.err = w.err
			}
			back = append(back, w)
		}
		for _, w := range back {
			f.bg.free <- w
		}
	}
	return f.err
}

// stopBackground waits for the writing goroutine to write what it was
// handed, and takes its error.
func (f *File) stopBackground() {
	if f.bg == nil {
		return
	}
	close(f.bg.full)
	<-f.bg.done
	for len(f.bg.free) > 0 {
		if w := <-f.bg.free; w.err != nil && f.err == nil {
			f.err = w.err
		}
	}
	f.bg = nil
	if err := f.stopRing(); err != nil && f.err == nil {
		f.err = err
	}
}

// flush writes the first n bytes of the buffer (a multiple of align, or
// all of it once direct I/O is off) and keeps the rest.
func (f *File) flush(n int) {
	if f.err != nil || n == 0 {
		return
	}
	if f.err = f.write(f.buf[:n]); f.err != nil {
		return
	}
	rest := copy(f.buf, f.buf[n:])
	f.buf = f.buf[:rest]
}

// write writes b (a multiple of align, or anything once direct I/O is
// off) at the file's offset.
func (f *File) write(b []byte) error {
	n, err := f.f.Write(b)
	f.off += int64(n)
	if errors.Is(err, unix.EINVAL) && f.direct {
		// A file system that takes O_DIRECT at open but not at write
		// (some FUSE and network file systems): write as usual.
		if err = f.buffered(); err == nil {
			n, err = f.f.Write(b[n:])
			f.off += int64(n)
		}
	}
	return err
}

// buffered turns direct I/O off.
func (f *File) buffered() error {
	fl, err := unix.FcntlInt(f.f.Fd(), unix.F_GETFL, 0)
	if err == nil {
		_, err = unix.FcntlInt(f.f.Fd(), unix.F_SETFL, fl&^unix.O_DIRECT)
	}
	f.direct = false
	return err
}

// Close writes what is buffered and closes the file. The tail that does
// not fill an aligned block is written without direct I/O.
func (f *File) Close() error {
	f.stopBackground()
	whole := len(f.buf) / align * align
	f.flush(whole)
	if f.direct && len(f.buf) > 0 && f.err == nil {
		f.err = f.buffered()
	}
	f.flush(len(f.buf))
	if err := f.f.Close(); f.err == nil {
		f.err = err
	}
	f.buf = nil
	if f.maps != nil {
		f.unmap.Stop()
		f.maps.release() // no write is in flight: stopBackground waited
	}
	if f.err == nil {
		f.err = os.ErrClosed // a Write after Close fails
		return nil
	}
	return f.err
}
