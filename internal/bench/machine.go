package bench

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
)

// Machine names the machine a report was measured on.
type Machine struct {
	CPU       string `json:"cpu"`
	CPUs      int    `json:"cpus"`
	MemBytes  int64  `json:"mem_bytes"`
	OS        string `json:"os"`
	Kernel    string `json:"kernel,omitempty"`
	Go        string `json:"go"`
	LoadStart string `json:"load_start,omitempty"`
	LoadEnd   string `json:"load_end,omitempty"`
}

// ReadMachine describes this machine (from /proc on Linux); LoadStart is
// the current load average (1, 5, 15 minutes).
func ReadMachine() Machine {
	m := Machine{CPUs: runtime.NumCPU(), OS: runtime.GOOS + "/" + runtime.GOARCH, Go: runtime.Version()}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		sc := bufio.NewScanner(bytes.NewReader(b))
		for sc.Scan() {
			if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPU = strings.TrimSpace(v)
				break
			}
		}
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		for line := range strings.Lines(string(b)) {
			if f := strings.Fields(line); len(f) >= 2 && f[0] == "MemTotal:" {
				kb, _ := strconv.ParseInt(f[1], 10, 64)
				m.MemBytes = kb << 10
			}
		}
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(b))
	}
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		if f := strings.Fields(string(b)); len(f) >= 3 {
			m.LoadStart = strings.Join(f[:3], " ")
		}
	}
	return m
}

// String is one line naming the machine.
func (m Machine) String() string {
	cpu := m.CPU
	if cpu == "" {
		cpu = "unknown CPU"
	}
	s := fmt.Sprintf("%s, %d logical CPUs, %.0f GiB RAM, %s", cpu, m.CPUs, float64(m.MemBytes)/(1<<30), m.OS)
	if m.Kernel != "" {
		s += ", Linux " + m.Kernel
	}
	return s + ", " + m.Go
}
