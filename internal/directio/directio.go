// Package directio writes a file with direct I/O (Linux O_DIRECT): the
// data goes from the process's buffer to the disk, not through the page
// cache. Writing a history of hundreds of megabytes through the page
// cache costs the writer a copy and page allocation for every byte (and
// the kernel's writeback, later, some more); with direct I/O it costs a
// system call per few megabytes. Where the file system refuses direct I/O
// (tmpfs, some network file systems), the file is written as usual.
package directio

import (
	"errors"
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// align is the alignment direct I/O asks of buffers, offsets and lengths
// (the logical block size; 4096 covers every common disk).
const align = 4096

// bufSize is the size of one write.
const bufSize = 4 << 20

// File is a file being written, sequentially, from the start.
type File struct {
	f      *os.File
	direct bool
	buf    []byte // aligned; len(buf) bytes are pending
	err    error
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

// Name is the file's name.
func (f *File) Name() string { return f.f.Name() }

// Direct reports whether the file is written with direct I/O.
func (f *File) Direct() bool { return f.direct }

// Write buffers p, writing whole buffers as they fill.
func (f *File) Write(p []byte) (int, error) {
	n := 0
	for len(p) > 0 && f.err == nil {
		c := copy(f.buf[len(f.buf):cap(f.buf)], p)
		f.buf = f.buf[:len(f.buf)+c]
		p, n = p[c:], n+c
		if len(f.buf) == cap(f.buf) {
			f.flush(len(f.buf))
		}
	}
	return n, f.err
}

// flush writes the first n bytes of the buffer (a multiple of align, or
// all of it once direct I/O is off) and keeps the rest.
func (f *File) flush(n int) {
	if f.err != nil || n == 0 {
		return
	}
	_, err := f.f.Write(f.buf[:n])
	if errors.Is(err, unix.EINVAL) && f.direct {
		// A file system that takes O_DIRECT at open but not at write
		// (some FUSE and network file systems): write as usual.
		if err = f.buffered(); err == nil {
			_, err = f.f.Write(f.buf[:n])
		}
	}
	if err != nil {
		f.err = err
		return
	}
	rest := copy(f.buf, f.buf[n:])
	f.buf = f.buf[:rest]
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
	whole := len(f.buf) / align * align
	f.flush(whole)
	if f.direct && len(f.buf) > 0 && f.err == nil {
		f.err = f.buffered()
	}
	f.flush(len(f.buf))
	if err := f.f.Close(); f.err == nil {
		f.err = err
	}
	if f.err == nil {
		f.err = os.ErrClosed // a Write after Close fails
		return nil
	}
	return f.err
}
