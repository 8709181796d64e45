package bench

import (
	"image/color"
	"io"
	"math"
	"path/filepath"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// The size of one plot (and of one panel of a grid).
const (
	plotW = 16 * vg.Centimeter
	plotH = 10 * vg.Centimeter
)

// series is one line or scatter of a plot.
type series struct {
	name   string
	xs, ys []float64
	style  int  // colour and glyph index (plotutil's palettes)
	dashed bool // a fitted line, not measurements
	dashes bool // measurements joined by a dashed line
	noLine bool // points only
	glyph  draw.GlyphDrawer
	color  color.Color
}

func newPlot(title, xLabel, yLabel string, logX, logY bool) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = xLabel
	p.Y.Label.Text = yLabel
	if logX {
		p.X.Scale = plot.LogScale{}
		p.X.Tick.Marker = plot.LogTicks{Prec: -1}
	}
	if logY {
		p.Y.Scale = plot.LogScale{}
		p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	}
	p.Add(plotter.NewGrid())
	p.Legend.Top = true
	p.Legend.Left = true
	return p
}

// add draws s on p; points with a coordinate that a log axis cannot show
// (zero or negative) are left out.
func add(p *plot.Plot, s series) error {
	_, logX := p.X.Scale.(plot.LogScale)
	_, logY := p.Y.Scale.(plot.LogScale)
	var xys plotter.XYs
	for i := range s.xs {
		if (logX && s.xs[i] <= 0) || (logY && s.ys[i] <= 0) {
			continue
		}
		xys = append(xys, plotter.XY{X: s.xs[i], Y: s.ys[i]})
	}
	if len(xys) == 0 {
		return nil
	}
	c := s.color
	if c == nil {
		c = plotutil.Color(s.style)
	}
	if s.dashed {
		l, err := plotter.NewLine(xys)
		if err != nil {
			return err
		}
		l.Color = c
		l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
		p.Add(l)
		p.Legend.Add(s.name, l)
		return nil
	}
	sc, err := plotter.NewScatter(xys)
	if err != nil {
		return err
	}
	sc.Color = c
	sc.Shape = plotutil.Shape(s.style)
	if s.glyph != nil {
		sc.Shape = s.glyph
	}
	sc.Radius = vg.Points(3)
	if s.noLine {
		sc.Radius = vg.Points(5)
		p.Add(sc)
		p.Legend.Add(s.name, sc)
		return nil
	}
	l, err := plotter.NewLine(xys)
	if err != nil {
		return err
	}
	l.Color = c
	if s.dashes {
		l.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
	}
	p.Add(l, sc)
	p.Legend.Add(s.name, l, sc)
	return nil
}

// savePlot writes p as dir/name (PNG) and returns name.
func savePlot(p *plot.Plot, dir, name string) (string, error) {
	headroom(p, plotH)
	return name, p.Save(plotW, plotH, filepath.Join(dir, name))
}

// headroom raises the top of p's y axis so that the legend, drawn in the
// top left corner, stays clear of the data; h is the height of the plot.
func headroom(p *plot.Plot, h vg.Length) {
	r := p.Legend.Rectangle(draw.Canvas{})
	lh := float64(r.Max.Y - r.Min.Y)
	if lh <= 0 || p.Y.Max <= p.Y.Min {
		return
	}
	f := min(0.6, lh/float64(h*0.7)+0.04)
	if _, ok := p.Y.Scale.(plot.LogScale); ok && p.Y.Min > 0 {
		lmin, lmax := math.Log10(p.Y.Min), math.Log10(p.Y.Max)
		p.Y.Max = math.Pow(10, lmin+(lmax-lmin)/(1-f))
		return
	}
	p.Y.Max = p.Y.Min + (p.Y.Max-p.Y.Min)/(1-f)
}

// saveGrid draws plots as a grid of panels (rows of columns) into one PNG.
func saveGrid(plots [][]*plot.Plot, dir, name string) (string, error) {
	rows, cols := len(plots), len(plots[0])
	panelW, panelH := plotW*0.75, plotH*0.9
	img := vgimg.New(panelW*vg.Length(cols), panelH*vg.Length(rows))
	dc := draw.New(img)
	t := draw.Tiles{Rows: rows, Cols: cols, PadX: vg.Millimeter * 4, PadY: vg.Millimeter * 4,
		PadTop: vg.Millimeter * 2, PadBottom: vg.Millimeter * 2, PadLeft: vg.Millimeter * 2, PadRight: vg.Millimeter * 2}
	for _, row := range plots {
		for _, p := range row {
			if p != nil {
				headroom(p, panelH)
			}
		}
	}
	canvases := plot.Align(plots, t, dc)
	for i := range plots {
		for j := range plots[i] {
			if plots[i][j] != nil {
				plots[i][j].Draw(canvases[i][j])
			}
		}
	}
	return name, writeFile(filepath.Join(dir, name), func(w io.Writer) error {
		_, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(w)
		return err
	})
}

// Glyphs for the points that are not measurements.
var (
	timeoutGlyph = draw.CrossGlyph{}
	oomGlyph     = draw.PyramidGlyph{}
	red          = color.RGBA{R: 200, A: 255}
)
