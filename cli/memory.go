package cli

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// memoryBound is what pmlin check may use, and where the figure comes
// from: --max-memory when given (flag > 0), else the least of the memory
// the kernel says is available (MemAvailable) and the room left under the
// limit of each memory cgroup the process is in, from its own up to the
// root (cgroup v2 memory.max, v1 memory.limit_in_bytes; page cache, which
// the kernel reclaims before it kills, counts as room). 0 when none is
// known (another system): no bound. root is "/" but in tests.
func memoryBound(flag int64, root string) (int64, string) {
	if flag > 0 {
		return flag, "--max-memory"
	}
	bound, source := int64(0), ""
	take := func(v int64, what string) {
		if v > 0 && (bound == 0 || v < bound) {
			bound, source = v, what
		}
	}
	take(meminfoAvailable(filepath.Join(root, "proc/meminfo")), "the memory available (MemAvailable in /proc/meminfo)")
	for _, c := range memoryCgroups(root) {
		take(c.room(), "the limit of memory cgroup "+c.dir)
	}
	return bound, source
}

// meminfoAvailable reads MemAvailable from a /proc/meminfo, in bytes (0 if
// absent).
func meminfoAvailable(path string) int64 {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) >= 2 && f[0] == "MemAvailable:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10
		}
	}
	return 0
}

// cgroupFiles names a memory cgroup's files: its limit, its usage, and in
// memory.stat the page cache it counts.
type cgroupFiles struct {
	dir, limit, usage, cache string
}

var (
	cgroupV2 = cgroupFiles{limit: "memory.max", usage: "memory.current", cache: "file"}
	cgroupV1 = cgroupFiles{limit: "memory.limit_in_bytes", usage: "memory.usage_in_bytes", cache: "total_cache"}
)

// memoryCgroups lists the memory cgroups the process is in, from its own
// up to the hierarchy's root, as /proc/self/cgroup names them (those
// whose directory is not visible are left out).
func memoryCgroups(root string) []cgroupFiles {
	b, err := os.ReadFile(filepath.Join(root, "proc/self/cgroup"))
	if err != nil {
		return nil
	}
	var out []cgroupFiles
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.SplitN(line, ":", 3)
		if len(f) != 3 {
			continue
		}
		kind, base := cgroupV2, filepath.Join(root, "sys/fs/cgroup")
		switch {
		case f[0] == "0" && f[1] == "":
		case strings.Contains(","+f[1]+",", ",memory,"):
			kind, base = cgroupV1, filepath.Join(base, "memory")
		default:
			continue
		}
		for p := filepath.Clean("/" + f[2]); ; p = filepath.Dir(p) {
			dir := filepath.Join(base, p)
			if _, err := os.Stat(filepath.Join(dir, kind.limit)); err == nil {
				c := kind
				c.dir = dir
				out = append(out, c)
			}
			if p == "/" {
				break
			}
		}
	}
	return out
}

// room is the memory left under the cgroup's limit (0: no limit, or
// unreadable).
func (c cgroupFiles) room() int64 {
	limit := readInt(filepath.Join(c.dir, c.limit))
	if limit <= 0 || limit >= 1<<60 { // "max", or v1's "unlimited"
		return 0
	}
	room := limit - readInt(filepath.Join(c.dir, c.usage))
	if b, err := os.ReadFile(filepath.Join(c.dir, "memory.stat")); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, " "); ok && k == c.cache {
				n, _ := strconv.ParseInt(v, 10, 64)
				room += n
			}
		}
	}
	return max(room, 1) // at the limit already: nothing left, but bounded
}

// readInt reads a file holding one integer (0 if it cannot).
func readInt(path string) int64 {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	v, _ := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	return v
}
