package directio

import (
	"errors"
	"os"
	"runtime"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// A write with direct I/O waits for the disk (4-50 ms a buffer of 4 MB
// here) in the system call, and a goroutine in a system call keeps its P
// (its share of GOMAXPROCS) until the runtime's monitor takes it back,
// which, in a process whose goroutines are all busy computing, it does
// only after one of its sleeps of up to 10 ms (twice that for a call
// seen once first). The driver's workers are such goroutines: with as
// many workers as Ps, one P of two stood idle for most of each write
// (a trace of a recording at 8 workers on 2 Ps: 0.2 s of 1.3).
//
// So where the kernel has io_uring, the writing goroutine submits each
// write to a ring and waits for its completion on an eventfd through the
// network poller: it waits parked, like a goroutine reading a socket, and
// its P goes on running the workers. Where io_uring is not there (an old
// kernel, a sandbox that forbids it), writes are plain system calls.
//
// A ring here has one write in flight at a time: the writing goroutine
// writes the full buffers one after another, as the plain calls did.

// io_uring's constants and layouts (linux/io_uring.h).
const (
	sysIOURingSetup    = 425
	sysIOURingEnter    = 426
	sysIOURingRegister = 427

	ioringOffSQRing       = 0
	ioringOffCQRing       = 0x8000000
	ioringOffSQEs         = 0x10000000
	ioringFeatSingleMmap  = 1 << 0
	ioringRegisterEventFD = 4
	ioringOpWrite         = 23
	iosqeAsync            = 1 << 4

	sqeSize = 64
	cqeSize = 16
)

// uringParams is struct io_uring_params (120 bytes).
type uringParams struct {
	sqEntries, cqEntries, flags, sqThreadCPU uint32
	sqThreadIdle, features, wqFD             uint32
	resv                                     [3]uint32
	sqOff                                    sqringOffsets
	cqOff                                    cqringOffsets
}

// sqringOffsets is struct io_sqring_offsets: where the submission
// ring's fields are in its mapping.
type sqringOffsets struct {
	head, tail, ringMask, ringEntries, flags, dropped, array, resv1 uint32
	userAddr                                                        uint64
}

// cqringOffsets is struct io_cqring_offsets.
type cqringOffsets struct {
	head, tail, ringMask, ringEntries, overflow, cqes, flags, resv1 uint32
	userAddr                                                        uint64
}

// ring is an io_uring of one entry writing to one file, and the eventfd
// its completions signal.
type ring struct {
	fd     int
	sq, cq []byte // the rings (one mapping where the kernel shares them)
	sqes   []byte
	p      uringParams
	event  *os.File // the eventfd, non-blocking: read through the poller
	closed bool
}

// newRing returns a ring, or an error where io_uring cannot be used.
func newRing() (*ring, error) {
	r := &ring{fd: -1}
	fd, _, errno := unix.Syscall(sysIOURingSetup, 1, uintptr(unsafe.Pointer(&r.p)), 0)
	if errno != 0 {
		return nil, errno
	}
	r.fd = int(fd)
	ok := false
	defer func() {
		if !ok {
			r.close()
		}
	}()
	sqSize := int(r.p.sqOff.array + r.p.sqEntries*4)
	cqSize := int(r.p.cqOff.cqes + r.p.cqEntries*cqeSize)
	single := r.p.features&ioringFeatSingleMmap != 0
	if single {
		sqSize = max(sqSize, cqSize)
	}
	var err error
	if r.sq, err = unix.Mmap(r.fd, ioringOffSQRing, sqSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE); err != nil {
		return nil, err
	}
	r.cq = r.sq
	if !single {
		if r.cq, err = unix.Mmap(r.fd, ioringOffCQRing, cqSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE); err != nil {
			return nil, err
		}
	}
	if r.sqes, err = unix.Mmap(r.fd, ioringOffSQEs, int(r.p.sqEntries)*sqeSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE); err != nil {
		return nil, err
	}
	efd, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		return nil, err
	}
	r.event = os.NewFile(uintptr(efd), "io_uring eventfd")
	if err := r.event.SetReadDeadline(time.Time{}); err != nil {
		return nil, err // not in the poller: a wait would fail or hold the P
	}
	e := int32(efd)
	if _, _, errno := unix.Syscall6(sysIOURingRegister, uintptr(r.fd), ioringRegisterEventFD, uintptr(unsafe.Pointer(&e)), 1, 0, 0); errno != 0 {
		return nil, errno
	}
	ok = true
	return r, nil
}

// word is the 32-bit word of mapping m at offset off, for atomic access
// (the ring's head and tail are shared with the kernel).
func word(m []byte, off uint32) *uint32 { return (*uint32)(unsafe.Pointer(&m[off])) }

// write writes b to file descriptor fd at offset off, in as many writes
// as the kernel needs (a short write goes on from where it stopped), and
// waits for them parked on the eventfd.
func (r *ring) write(fd int, b []byte, off int64) error {
	for len(b) > 0 {
		n, err := r.writeOnce(fd, b, off)
		if err != nil {
			return err
		}
		if n == 0 {
			return errors.New("directio: io_uring wrote nothing")
		}
		b, off = b[n:], off+int64(n)
	}
	return nil
}

// writeOnce submits one write and returns what its completion says.
func (r *ring) writeOnce(fd int, b []byte, off int64) (int, error) {
	tail := atomic.LoadUint32(word(r.sq, r.p.sqOff.tail))
	mask := *word(r.sq, r.p.sqOff.ringMask)
	idx := tail & mask
	sqe := r.sqes[idx*sqeSize : (idx+1)*sqeSize : (idx+1)*sqeSize]
	clear(sqe)
	sqe[0] = ioringOpWrite
	// Issued by the kernel's worker thread, never inline: an inline
	// write that must wait (for the block layer's queue, or the file
	// system's block allocation) would wait in io_uring_enter, keeping
	// the P again.
	sqe[1] = iosqeAsync
	*(*int32)(unsafe.Pointer(&sqe[4])) = int32(fd)
	*(*uint64)(unsafe.Pointer(&sqe[8])) = uint64(off)
	*(*uint64)(unsafe.Pointer(&sqe[16])) = uint64(uintptr(unsafe.Pointer(&b[0])))
	*(*uint32)(unsafe.Pointer(&sqe[24])) = uint32(min(len(b), 1<<30))
	*word(r.sq, r.p.sqOff.array+4*idx) = idx
	// The store of the tail publishes the entry (a release: Go's atomics
	// are sequentially consistent).
	atomic.StoreUint32(word(r.sq, r.p.sqOff.tail), tail+1)
	for {
		n, _, errno := unix.Syscall6(sysIOURingEnter, uintptr(r.fd), 1, 0, 0, 0, 0)
		if errno == unix.EINTR {
			continue
		}
		if errno != 0 {
			return 0, errno
		}
		if n != 1 {
			return 0, errors.New("directio: io_uring took no write")
		}
		break
	}
	res, err := r.complete()
	runtime.KeepAlive(b) // the kernel reads it until the completion
	if err != nil {
		return 0, err
	}
	if res < 0 {
		return 0, unix.Errno(-res)
	}
	return int(res), nil
}

// pollEvery is how often a write in flight looks for its completion while
// the eventfd has not woken it.
const pollEvery = time.Millisecond

// complete waits for the one completion in flight and returns its result.
func (r *ring) complete() (int32, error) {
	var buf [8]byte
	for {
		head := atomic.LoadUint32(word(r.cq, r.p.cqOff.head))
		if atomic.LoadUint32(word(r.cq, r.p.cqOff.tail)) != head {
			mask := *word(r.cq, r.p.cqOff.ringMask)
			cqe := r.p.cqOff.cqes + (head&mask)*cqeSize
			res := *(*int32)(unsafe.Pointer(&r.cq[cqe+8]))
			atomic.StoreUint32(word(r.cq, r.p.cqOff.head), head+1)
			return res, nil
		}
		// Parked in the poller until the kernel signals a completion
		// (one that came before the read leaves the counter set), or
		// until the deadline: the runtime polls the network only when
		// a P runs out of work, or from its monitor every 10 ms, so
		// while every P is busy the eventfd's signal waits that long,
		// and a write of 4 MiB took about 15 ms more than a plain one.
		// A deadline is a timer, which the scheduler checks each time
		// it switches goroutines (the driver's workers switch often).
		if err := r.event.SetReadDeadline(time.Now().Add(pollEvery)); err != nil {
			return 0, err
		}
		if _, err := r.event.Read(buf[:]); err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
			return 0, err
		}
	}
}

func (r *ring) close() {
	if r.closed {
		return
	}
	r.closed = true
	if r.event != nil {
		r.event.Close()
	}
	if r.sqes != nil {
		unix.Munmap(r.sqes)
	}
	if r.cq != nil && (r.sq == nil || &r.cq[0] != &r.sq[0]) {
		unix.Munmap(r.cq)
	}
	if r.sq != nil {
		unix.Munmap(r.sq)
	}
	if r.fd >= 0 {
		unix.Close(r.fd)
	}
}
