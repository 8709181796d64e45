package history

// The Reader's own counts, for the external tests.
var (
	ReaderCounts    = (*Reader).counts
	ReaderProcesses = (*Reader).processes
	ReaderLastLine  = (*Reader).lastLine
	ReaderStepsOnly = (*Reader).stepsOnly
)
