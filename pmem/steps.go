package pmem

// Steps makes a worker's accesses one after another and keeps the first
// error: after it, every access is skipped (a skipped Load returns 0, a
// skipped CAS false). Code that makes many accesses, such as a target's
// operation, checks Err before it acts on what it loaded, and returns Err
// at the end, instead of checking every access; an access that fails
// because the region crashed leaves ErrCrashed there.
type Steps struct {
	W   *Worker
	Err error
}

// Load is W.Load, unless an access failed.
func (s *Steps) Load(off uint64) uint64 {
	if s.Err != nil {
		return 0
	}
	v, err := s.W.Load(off)
	s.Err = err
	return v
}

// Store is W.Store, unless an access failed.
func (s *Steps) Store(off, v uint64) {
	if s.Err == nil {
		s.Err = s.W.Store(off, v)
	}
}

// CAS is W.CAS, unless an access failed.
func (s *Steps) CAS(off, old, new uint64) bool {
	if s.Err != nil {
		return false
	}
	ok, err := s.W.CAS(off, old, new)
	s.Err = err
	return ok
}

// Flush is W.Flush, unless an access failed.
func (s *Steps) Flush(off uint64) {
	if s.Err == nil {
		s.Err = s.W.Flush(off)
	}
}

// Fence is W.Fence, unless an access failed.
func (s *Steps) Fence() {
	if s.Err == nil {
		s.Err = s.W.Fence()
	}
}

// Persist is W.Persist (Flush, then Fence), unless an access failed.
func (s *Steps) Persist(off uint64) {
	if s.Err == nil {
		s.Err = s.W.Persist(off)
	}
}

// Wait is W.Wait, unless an access failed.
func (s *Steps) Wait() {
	if s.Err == nil {
		s.Err = s.W.Wait()
	}
}
