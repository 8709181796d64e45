package report_test

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pmlin/pmlin/internal/histgen"
	"github.com/pmlin/pmlin/internal/history"
	"github.com/pmlin/pmlin/internal/report"
	"github.com/pmlin/pmlin/internal/testenv"
)

// The browser test opens reports in headless Chromium (Debian's chromium
// package; .ci/run installs it). It skips when no browser is installed,
// unless CI is set: then it fails. Screenshots are kept under
// $PMLIN_ARTIFACTS, or internal/report/testdata/screenshots/ (not committed).

// chromium finds the browser: $PMLIN_CHROMIUM, or a usual name on PATH.
func chromium(t *testing.T) string {
	t.Helper()
	names := []string{os.Getenv("PMLIN_CHROMIUM"), "chromium", "chromium-browser", "google-chrome", "chrome-headless-shell"}
	for _, n := range names {
		if n == "" {
			continue
		}
		if p, err := exec.LookPath(n); err == nil {
			return p
		}
	}
	if ci := os.Getenv("CI"); ci != "" && ci != "false" && ci != "0" {
		t.Fatal("CI is set and no Chromium is installed (apt-get install -y chromium, or set PMLIN_CHROMIUM)")
	}
	t.Skip("no Chromium installed (apt-get install -y chromium); set CI=true to make this a failure")
	return ""
}

// screenshot has the browser draw page in a window of size ("W,H") into
// the file shot (replacing an earlier one) and returns the image.
func screenshot(t *testing.T, bin, page, size, shot string) image.Image {
	t.Helper()
	os.Remove(shot)
	headless(t, bin, page, "--hide-scrollbars", "--window-size="+size, "--screenshot="+shot)
	f, err := os.Open(shot)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// headless runs the browser on a file with extra flags, in a fresh
// profile, with networking features off.
func headless(t *testing.T, bin, page string, extra ...string) (stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	args := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--disable-dev-shm-usage", "--user-data-dir=" + t.TempDir()}
	args = append(args, extra...)
	args = append(args, "file://"+page)
	cmd := exec.CommandContext(ctx, bin, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s: %v\n%s", bin, err, errb.String())
	}
	return out.String(), errb.String()
}

var bodyAttr = regexp.MustCompile(`<body([^>]*)>`)

// attr returns a data attribute of <body> in a dumped DOM.
func attr(dom, name string) (string, bool) {
	m := bodyAttr.FindStringSubmatch(dom)
	if m == nil {
		return "", false
	}
	re := regexp.MustCompile(`\s` + regexp.QuoteMeta(name) + `="([^"]*)"`)
	v := re.FindStringSubmatch(m[1])
	if v == nil {
		return "", false
	}
	return v[1], true
}

func artifacts(t *testing.T) string {
	dir := os.Getenv("PMLIN_ARTIFACTS")
	if dir == "" {
		dir = filepath.Join("testdata", "screenshots")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		t.Fatal(err)
	}
	return abs
}

// highlightPixels counts the pixels of the highlight fill (#ffd6a5).
func highlightPixels(img image.Image) int {
	n := 0
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			if near(r>>8, 0xff) && near(g>>8, 0xd6) && near(bl>>8, 0xa5) {
				n++
			}
		}
	}
	return n
}

func near(a uint32, b uint32) bool { return a+3 >= b && a <= b+3 }

func TestBrowser(t *testing.T) {
	bin := chromium(t)
	dir := t.TempDir()
	shots := artifacts(t)

	// The detector works: a page with a script error is caught.
	bad := filepath.Join(dir, "bad.html")
	os.WriteFile(bad, []byte(`<!DOCTYPE html><html><head><script>window.addEventListener("error",function(e){document.body.setAttribute("data-errors",e.message)});</script></head><body><script>null.x();</script></body></html>`), 0o644)
	dom, stderr := headless(t, bin, bad, "--enable-logging=stderr", "--v=0", "--dump-dom")
	if _, ok := attr(dom, "data-errors"); !ok && !strings.Contains(stderr, "Uncaught") {
		t.Fatalf("a script error went unnoticed:\n%s\n%s", dom, stderr)
	}

	var large bytes.Buffer
	st, err := histgen.WriteLarge(&large, histgen.LargeConfig{Ops: 20000, Procs: 8, Words: 500, K: 3, ReadFraction: 0.5,
		Violation: histgen.PlantLostWrite, ViolationAt: 10000, CrashEvery: 3000}, 3)
	if err != nil {
		t.Fatal(err)
	}
	pages := []struct {
		name string
		text []byte
		mode history.Mode
	}{
		{"stale", nil, history.Strict},
		{"dirty-bit", nil, history.Strict},
		{"crash", nil, history.Strict},
		{"torn-cas", readFile(t, "../analyzer/testdata/crashes/status-unpersisted.hist"), history.Strict},
		{"recovery-wrong-way", readFile(t, "../analyzer/testdata/crashes/recovery-wrong-way.hist"), history.Strict},
		{"two-cut-off", readFile(t, "../analyzer/testdata/chains/two-cut-off.hist"), history.Recoverable},
		{"lost-write-20k", large.Bytes(), history.Strict},
		{"linearizable", nil, history.Strict},
	}
	for _, p := range pages {
		t.Run(p.name+"/"+p.mode.String(), func(t *testing.T) {
			text := p.text
			if text == nil {
				b, err := os.ReadFile(filepath.Join("testdata", p.name+".hist"))
				if err != nil {
					t.Fatal(err)
				}
				text = b
			}
			a, d := analyzeBytes(t, p.name+".hist", text, p.mode)
			var buf bytes.Buffer
			if err := report.HTML(&buf, d); err != nil {
				t.Fatal(err)
			}
			page := filepath.Join(dir, p.name+"."+p.mode.String()+".html")
			if err := os.WriteFile(page, buf.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}

			dom, stderr := headless(t, bin, page, "--enable-logging=stderr", "--v=0", "--dump-dom")
			if e, ok := attr(dom, "data-errors"); ok || strings.Contains(stderr, "Uncaught") {
				t.Fatalf("script errors: %q\n%s", e, grepLines(stderr, "Uncaught"))
			}
			if r, _ := attr(dom, "data-render"); r != "ok" {
				t.Fatalf("the page's script did not finish (data-render=%q)", r)
			}
			// Each anomaly's operations are drawn twice: a bar and a vertex.
			want := 0
			for _, nb := range d.Neighbourhoods {
				want += 2 * len(nb.Core)
			}
			hl, _ := attr(dom, "data-highlighted")
			drawn, _ := attr(dom, "data-highlighted-drawn")
			if hl != strconv.Itoa(want) || drawn != hl {
				t.Fatalf("highlighted %s, drawn %s, want %d", hl, drawn, want)
			}
			checkDrawn(t, dom, d, p.name != "lost-write-20k")

			shot := filepath.Join(shots, p.name+"."+p.mode.String()+".png")
			img := screenshot(t, bin, page, "1400,900", shot)
			px := highlightPixels(img)
			t.Logf("%s: %d bytes, %d operations, %d highlighted elements drawn, %d highlight pixels; screenshot %s",
				p.name, buf.Len(), a.Result.Operations, want, px, shot)
			if b := img.Bounds(); b.Dx() != 1400 || b.Dy() != 900 {
				t.Fatalf("screenshot %v", b)
			}
			if want > 0 && px < 500 {
				t.Fatalf("the highlighted operations are not visible in the screenshot (%d pixels)", px)
			}
			if p.name == "lost-write-20k" && !strings.Contains(dom, `data-line="`+strconv.FormatInt(st.ViolationLine, 10)+`"`) {
				t.Fatalf("the planted violation (line %d) is not drawn", st.ViolationLine)
			}
		})
	}
}

// checkDrawn checks the page's values, crashes and edge labels: every
// operation drawn shows its values (a bar and, for a vertex, a line under
// it), every crash of an anomaly's evidence is a vertex of its graph, and
// on the examples of testdata (small) no edge label overlaps another, a
// vertex or its values.
func checkDrawn(t *testing.T, dom string, d *report.Data, small bool) {
	t.Helper()
	bars, vertices, crashes := 0, 0, 0
	for _, nb := range d.Neighbourhoods {
		bars += len(nb.Timeline)
		for _, o := range nb.Nodes {
			if o.Line != 0 {
				vertices++
			}
		}
		crashes += len(nb.Crashes)
	}
	if len(d.Neighbourhoods) == 0 {
		bars = len(d.Sample)
	}
	vals, _ := attr(dom, "data-values-drawn")
	if n, _ := strconv.Atoi(vals); n < bars+vertices {
		t.Errorf("%s values drawn, want one per bar and vertex (%d)", vals, bars+vertices)
	}
	cd, _ := attr(dom, "data-crashes-drawn")
	if cd != strconv.Itoa(crashes) {
		t.Errorf("%s crash vertices drawn, the neighbourhoods have %d", cd, crashes)
	}
	for _, a := range d.Result.Anomalies[:len(d.Neighbourhoods)] {
		for _, c := range a.Crashes {
			if !strings.Contains(dom, `class="crashnode story" data-crash="`+strconv.FormatInt(c, 10)+`"`) ||
				!strings.Contains(dom, `class="crash story" data-crash="`+strconv.FormatInt(c, 10)+`"`) {
				t.Errorf("the crash at line %d of the evidence is not marked in both drawings", c)
			}
		}
	}
	labels, _ := attr(dom, "data-labels")
	over, _ := attr(dom, "data-label-overlaps")
	t.Logf("%s edge labels, %s overlaps; %s values drawn; %s crash vertices", labels, over, vals, cd)
	if small && over != "0" {
		t.Errorf("%s overlaps of edge labels", over)
	}
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// TestBrowserObjects opens version 2 reports in a window 1000 px wide:
// no script error, every bar and every highlighted bar drawn with a size,
// the highlight visible in a screenshot, and, for small histories, no
// timeline that scrolls sideways and no page wider than the window.
func TestBrowserObjects(t *testing.T) {
	bin := chromium(t)
	dir := t.TempDir()
	shots := artifacts(t)
	var large strings.Builder
	large.WriteString("pmlin-history v2\nobject x register\n")
	for k := 0; k < 300; k++ {
		v := k
		if k == 150 {
			v = k - 2
		}
		fmt.Fprintf(&large, "%d inv x write %d\n%d ret ok\n%d inv x read\n%d ret %d\n", k%3+1, k, k%3+1, k%3+1, k%3+1, v)
	}
	for _, p := range []struct {
		name, text string
		small      bool
	}{
		{"objects", objectsHist, true},
		{"objects-linearizable", "pmlin-history v2\nobject q queue\n1 inv q enq 1\n2 inv q enq 2\n1 ret ok\n2 ret ok\ncrash\n3 inv q deq\n3 ret 2\n", true},
		{"objects-large", large.String(), false},
	} {
		t.Run(p.name, func(t *testing.T) {
			_, res, page := objectsPage(t, p.text, history.Strict)
			file := filepath.Join(dir, p.name+".html")
			if err := os.WriteFile(file, []byte(page), 0o644); err != nil {
				t.Fatal(err)
			}
			dom, stderr := headless(t, bin, file, "--window-size=1000,900", "--enable-logging=stderr", "--v=0", "--dump-dom")
			if e, ok := attr(dom, "data-errors"); ok || strings.Contains(stderr, "Uncaught") {
				t.Fatalf("script errors: %q\n%s", e, grepLines(stderr, "Uncaught"))
			}
			if r, _ := attr(dom, "data-render"); r != "ok" {
				t.Fatalf("the page's script did not finish (data-render=%q)", r)
			}
			witness := 0
			for _, or := range res.Objects {
				if or.Explanation != nil {
					witness += len(or.Explanation.Ops)
				}
			}
			hl, _ := attr(dom, "data-highlighted")
			drawn, _ := attr(dom, "data-highlighted-drawn")
			ops, _ := attr(dom, "data-ops-drawn")
			bars := strings.Count(page, `<g class="op`)
			if hl != strconv.Itoa(witness) || drawn != hl || ops != strconv.Itoa(bars) {
				t.Fatalf("highlighted %s, drawn %s, want %d; bars drawn %s of %d", hl, drawn, witness, ops, bars)
			}
			scrolled, _ := attr(dom, "data-scrolled")
			over, _ := attr(dom, "data-page-overflow")
			if p.small && (scrolled != "0" || over != "0") {
				t.Errorf("a small history scrolls sideways: %s timelines scroll, the page is %s px wider than the window", scrolled, over)
			}
			shot := filepath.Join(shots, p.name+".png")
			img := screenshot(t, bin, file, "1000,1400", shot)
			px := highlightPixels(img)
			t.Logf("%s: %d bytes, %d bars, %s highlighted, %d highlight pixels, %s timelines scrolled, page %s px too wide; screenshot %s",
				p.name, len(page), bars, hl, px, scrolled, over, shot)
			if witness > 0 && px < 100 {
				t.Errorf("the highlighted operations are not visible in the screenshot (%d pixels)", px)
			}
		})
	}
}

// TestBrowserLayout opens the report of every finding the layout tests
// measure (report.LayoutCases) in a window 1000 px wide, as a person
// would, and measures what the page's script records: no timeline of a
// small finding scrolls sideways, the page is no wider than the window,
// no edge label or vertex's values overlaps another or a vertex, no edge
// runs through a text that is not its own label (the dense findings: at
// most one in eight), and every key read's values are in view. The two
// whole fuzz findings are kept as screenshots to look at.
func TestBrowserLayout(t *testing.T) {
	bin := chromium(t)
	dir := t.TempDir()
	shots := artifacts(t)
	for _, c := range report.LayoutCases {
		if !c.Short && !testenv.Long() {
			continue // PMLIN_LONG=1 opens them all
		}
		name := strings.TrimSuffix(strings.TrimSuffix(filepath.Base(c.Path), ".gz"), ".hist")
		if c.Dense {
			name = "finding-" + name
		}
		t.Run(name, func(t *testing.T) {
			d := report.CollectFile(t, c.Path)
			var buf bytes.Buffer
			if err := report.HTML(&buf, d); err != nil {
				t.Fatal(err)
			}
			page := filepath.Join(dir, name+".html")
			if err := os.WriteFile(page, buf.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			dom, stderr := headless(t, bin, page, "--window-size=1000,800", "--enable-logging=stderr", "--v=0", "--dump-dom")
			if e, ok := attr(dom, "data-errors"); ok || strings.Contains(stderr, "Uncaught") {
				t.Fatalf("script errors: %q\n%s", e, grepLines(stderr, "Uncaught"))
			}
			if r, _ := attr(dom, "data-render"); r != "ok" {
				t.Fatalf("the page's script did not finish (data-render=%q)", r)
			}
			get := func(name string) int {
				v, ok := attr(dom, name)
				n, err := strconv.Atoi(v)
				if !ok || err != nil {
					t.Fatalf("%s=%q", name, v)
				}
				return n
			}
			scrolled, over, overlaps := get("data-scrolled"), get("data-page-overflow"), get("data-label-overlaps")
			crossings, labels, texts, hidden := get("data-label-crossings"), get("data-labels"), get("data-texts"), get("data-key-hidden")
			t.Logf("%s: %d timelines scroll, page %d px too wide, %d edge labels, %d texts, %d overlaps, %d edges through a text, %d key values out of view",
				name, scrolled, over, labels, texts, overlaps, crossings, hidden)
			if (!c.Dense && scrolled > 0) || over > 0 {
				t.Errorf("the page scrolls sideways: %d timelines, %d px", scrolled, over)
			}
			if overlaps > 0 {
				t.Errorf("%d overlaps of texts", overlaps)
			}
			if crossings > 0 && (!c.Dense || 3*crossings > texts) {
				t.Errorf("%d edges through a text (%d texts)", crossings, texts)
			}
			if hidden > 0 {
				t.Errorf("%d key reads' values out of view", hidden)
			}
			if c.Dense {
				shot := filepath.Join(shots, name+".png")
				os.Remove(shot)
				headless(t, bin, page, "--hide-scrollbars", "--window-size=1000,1600", "--screenshot="+shot)
				t.Logf("screenshot %s", shot)
			}
		})
	}
}
