package cli

import (
	"bytes"
	"encoding/json"
	"image"
	"image/png"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
)

// TestCheckBinaryInput: random bytes, an executable and an image given to
// pmlin check get "not a pmlin history" naming the file, exit 2, kind
// malformed, line 0, as text and as JSON; never a panic, never a line of
// garbage.
func TestCheckBinaryInput(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	random := make([]byte, 64<<10)
	for i := range random {
		random[i] = byte(rng.Uint32())
	}
	var img bytes.Buffer
	png.Encode(&img, image.NewGray(image.Rect(0, 0, 4, 4)))
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		writeFile(t, "random.bin", string(random)): "this is binary data, not a pmlin history",
		exe:                                     "this is an ELF executable or library, not a pmlin history",
		writeFile(t, "image.png", img.String()): "this is a PNG image, not a pmlin history",
	}
	for f, want := range files {
		code, out, errs := pmlin(t, "", "check", f)
		if code != 2 || out != "" || !strings.HasPrefix(errs, "pmlin: "+f+": "+want) || strings.Count(errs, "\n") != 1 || len(errs) > 300 {
			t.Errorf("check %s: exit %d, stdout %q, stderr %q; want exit 2 and %q", f, code, out, errs, want)
		}
		code, out, _ = pmlin(t, "", "check", "--json", f)
		var e errorJSON
		if err := json.Unmarshal([]byte(out), &e); err != nil || code != 2 || e.Error.Kind != kindMalformed || e.Error.File != f ||
			e.Error.Line != 0 || !strings.HasPrefix(e.Error.Message, want) {
			t.Errorf("check --json %s: exit %d, %s", f, code, out)
		}
	}
	// Standard input too.
	code, _, errs := pmlin(t, string(random), "check", "-")
	if code != 2 || !strings.HasPrefix(errs, "pmlin: <stdin>: this is binary data, not a pmlin history") {
		t.Errorf("check - of random bytes: exit %d, %q", code, errs)
	}
}
