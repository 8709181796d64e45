package driver

import "time"

// The deterministic scheduler's watchdog. One worker runs at a time and
// hands the turn on only at region accesses; a worker that waits in Go for
// another one (a mutex, a channel) holds the turn forever, and every
// goroutine of the segment waits (until Go ends the process: "all
// goroutines are asleep"). The goroutine that waits for the segment to end
// (wait) also looks, every watchPeriod: if the turn has not changed hands
// and no operation was invoked for StuckAfter, it reports the worker
// holding the turn as Blocked, which aborts the segment and wakes the
// others; once a segment is aborted, it gives up on the workers that have
// not returned StuckAfter later (at least abandonAfter).

// abandonAfter is the least time the watchdog gives the workers of an
// aborted segment to return (their next region access fails: healthy ones
// return within microseconds).
const abandonAfter = time.Second

// wait waits for the goroutines of workers to return, watching them (see
// above). It returns the workers whose goroutines it gave up on (nil if
// all returned).
func (s *detSched) wait(workers []int) []bool {
	d := s.d
	bound := d.cfg.StuckAfter
	tick := time.NewTicker(min(max(bound/4, time.Millisecond), 100*time.Millisecond))
	defer tick.Stop()
	last, quiet := s.beat.Load(), time.Now()
	var aborted time.Time
	for {
		select {
		case <-s.done:
			return nil
		case now := <-tick.C:
			switch b := s.beat.Load(); {
			case d.aborted.Load():
				if aborted.IsZero() {
					aborted = now
				} else if now.Sub(aborted) >= max(bound, abandonAfter) {
					running := make([]bool, len(s.turn))
					for _, w := range workers {
						running[w] = !s.returned[w].Load()
					}
					return running
				}
			case b != last:
				last, quiet = b, now
			case now.Sub(quiet) >= bound:
				d.setBlocked(holder(b), now.Sub(quiet))
			}
		}
	}
}
