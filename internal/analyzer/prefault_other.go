//go:build !linux

package analyzer

// canPopulate: no request to map pages ahead here (see prefault_linux.go).
const canPopulate = false

func populate(memSpan) {}
