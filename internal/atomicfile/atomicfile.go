// Package atomicfile writes the files pmlin makes (histories, reports,
// kept findings, profiles) so that nothing is half there: the data goes to
// a temporary file beside the final one, NAME.partial-RANDOM, which is
// renamed to NAME only when it is complete. A write that fails or is
// interrupted removes its temporary file and leaves NAME as it was (absent,
// or the file it would have replaced); a process killed while writing
// leaves the temporary file, never a partial NAME. Without force, an
// existing NAME is never replaced, even by a writer that finishes at the
// same moment as another (the final step is a hard link, which fails if
// NAME exists).
//
// An existing NAME that is not a regular file (a device such as
// /dev/null, a named pipe, a terminal) cannot be replaced by a rename: it
// is written in place, as a stream.
package atomicfile

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
)

// Opener creates a new file name with mode perm for writing, failing if
// it exists (os.O_EXCL). The default is os.OpenFile's; pmlin run opens
// its histories for direct I/O.
type Opener func(name string, perm fs.FileMode) (io.WriteCloser, error)

func openExcl(name string, perm fs.FileMode) (io.WriteCloser, error) {
	return os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
}

// File is a file being written: Write to it, then Commit or Abort.
type File struct {
	w     io.WriteCloser
	path  string // the final name
	tmp   string // the temporary name; "" when written in place
	force bool
	done  bool
}

// Create starts writing path with mode perm (less the umask). Unless
// force, a path that exists is refused, with an error that Is
// fs.ErrExist, before anything is written.
func Create(path string, perm fs.FileMode, force bool) (*File, error) {
	return CreateWith(path, perm, force, openExcl)
}

// CreateWith is Create with the file opened by open.
func CreateWith(path string, perm fs.FileMode, force bool, open Opener) (*File, error) {
	final := path
	st, err := os.Stat(path)
	switch {
	case err == nil && !force:
		return nil, existError(path)
	case err == nil && !st.Mode().IsRegular():
		w, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			return nil, err
		}
		return &File{w: w, path: path, force: force}, nil
	case err == nil:
		// Replace what a symbolic link points to, not the link.
		if final, err = filepath.EvalSymlinks(path); err != nil {
			return nil, err
		}
	case !errors.Is(err, fs.ErrNotExist):
		return nil, err
	}
	for range 100 {
		tmp := final + ".partial-" + strconv.FormatUint(uint64(rand.Uint32()), 36)
		w, err := open(tmp, perm)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		return &File{w: w, path: final, tmp: tmp, force: force}, nil
	}
	return nil, fmt.Errorf("%s: no free temporary name beside it", path)
}

// Write writes to the temporary file.
func (f *File) Write(p []byte) (int, error) {
	n, err := f.w.Write(p)
	return n, f.named(err)
}

// named is err with the temporary file's name, if it names it, replaced
// by the final one: the file a user asked for, the other being gone.
func (f *File) named(err error) error {
	var pe *fs.PathError
	if f.tmp != "" && errors.As(err, &pe) && pe.Path == f.tmp {
		return &fs.PathError{Op: pe.Op, Path: f.path, Err: pe.Err}
	}
	return err
}

// Name is the final name.
func (f *File) Name() string { return f.path }

// Commit closes the file and gives it its final name. Without force, a
// file that appeared there meanwhile is kept, and Commit fails with an
// error that Is fs.ErrExist. On any error the temporary file is removed.
func (f *File) Commit() error {
	if f.done {
		return errors.New("atomicfile: " + f.path + " is already committed or aborted")
	}
	f.done = true
	err := f.close()
	if f.tmp == "" || err != nil {
		f.remove()
		return err
	}
	if f.force {
		err = os.Rename(f.tmp, f.path)
	} else {
		err = link(f.tmp, f.path)
	}
	f.remove()
	return err
}

// Abort closes the file and removes it (a file written in place stays,
// with what was written). After Commit it does nothing: a deferred Abort
// cleans up whatever path a function leaves by.
func (f *File) Abort() {
	if f.done {
		return
	}
	f.done = true
	f.close()
	f.remove()
}

// close syncs (where the writer can) and closes the file: a file renamed
// into place before its data reach the disk could be found empty after a
// power cut.
func (f *File) close() error {
	var err error
	if s, ok := f.w.(interface{ Sync() error }); ok && f.tmp != "" {
		err = s.Sync()
	}
	if cerr := f.w.Close(); err == nil {
		err = cerr
	}
	return f.named(err)
}

func (f *File) remove() {
	if f.tmp != "" {
		os.Remove(f.tmp) // gone already after a rename
	}
}

// link gives tmp the name path unless path exists. A hard link fails if
// its name exists, atomically; on a file system without hard links, the
// check and the rename are two steps.
func link(tmp, path string) error {
	err := os.Link(tmp, path)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, fs.ErrExist):
		return existError(path)
	}
	if _, serr := os.Lstat(path); serr == nil {
		return existError(path)
	}
	return os.Rename(tmp, path)
}

func existError(path string) error {
	return &fs.PathError{Op: "create", Path: path, Err: fs.ErrExist}
}

// Write writes path (see Create) with fill, through a buffer, and commits
// it; if fill fails, or ctx ends while it writes (an interrupt), nothing
// is left.
func Write(ctx context.Context, path string, perm fs.FileMode, force bool, fill func(io.Writer) error) error {
	f, err := Create(path, perm, force)
	if err != nil {
		return err
	}
	defer f.Abort()
	bw := bufio.NewWriterSize(CancelWriter(ctx, f), 1<<16)
	if err := fill(bw); err != nil {
		return err
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	return f.Commit()
}

// CancelWriter is w, whose writes fail once ctx is done: a writer that
// does not watch ctx itself (a report, a generated history) stops at its
// next write after an interrupt.
func CancelWriter(ctx context.Context, w io.Writer) io.Writer {
	return &cancelWriter{ctx: ctx, w: w}
}

type cancelWriter struct {
	ctx context.Context
	w   io.Writer
}

func (c *cancelWriter) Write(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.w.Write(p)
}
