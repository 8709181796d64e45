package report

import "testing"

// For the browser tests (package report_test): the findings the layout
// tests measure.
var LayoutCases = layoutCases

func CollectFile(t *testing.T, path string) *Data { return collect(t, path) }
