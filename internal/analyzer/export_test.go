package analyzer

// WithPartSize returns opts with the phases that split cut into parts of
// at least n operations instead of minPart, so that the tests' histories
// of a few thousand operations split into many parts (and, with several
// workers, are loaded with the prefaulter, which otherwise waits for
// large inputs).
func WithPartSize(opts Options, n int) Options {
	opts.partSize = n
	return opts
}

// Bounds returns neighbourhood options with the given bounds (the
// reports use the defaults).
func Bounds(maxNodes, window, maxTimeline int) NeighbourhoodOptions {
	return NeighbourhoodOptions{maxNodes: maxNodes, window: window, maxTimeline: maxTimeline}
}

// EstimateMemory is estimateMemory, for the external tests.
var EstimateMemory = estimateMemory
