// Package units writes quantities for people: memory sizes in binary
// units, as every message of pmlin about memory states them.
package units

import "fmt"

// Bytes writes a memory size in binary units (KiB, MiB, GiB).
func Bytes(b int64) string {
	switch {
	case b >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(b)/(1<<30))
	case b >= 1<<20:
		return fmt.Sprintf("%.0f MiB", float64(b)/(1<<20))
	}
	return fmt.Sprintf("%.0f KiB", float64(b)/(1<<10))
}
