package dashboard

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/goccy/go-graphviz"
)

// Sizes of the drawn graph, in SVG user units (Graphviz points).
const (
	// fontSize is the size of a box's label; dashboard.css uses the same.
	fontSize = 12
	// edgeFontSize is the size of an edge's label; dashboard.css uses the same.
	edgeFontSize = 11
	// graphMargin is the space around the drawing.
	graphMargin = 8
)

// layoutNode is a box to place: Label is what it shows (sizing the box).
type layoutNode struct {
	Key, Label string
}

// layoutEdge is a line to route from the box From to the box To, with an
// optional label beside it.
type layoutEdge struct {
	From, To, Label string
}

// box is a placed node: its top-left corner and size.
type box struct {
	X, Y, W, H float64
}

// route is a routed edge: Path is an SVG path of cubic Béziers that ends
// on the boxes' borders, LabelX/LabelY the centre of its label.
type route struct {
	Path           string
	LabelX, LabelY float64
}

// placement is the result of a layout.
type placement struct {
	Width, Height float64
	Boxes         []box
	Routes        []route
}

// layouter runs Graphviz's dot layout. Note: the Graphviz instance (and
// the WebAssembly module behind it, which go-graphviz shares between
// instances) is costly to create and not safe for concurrent use, so one
// is made on first use and every layout holds mu.
type layouter struct {
	mu sync.Mutex
	gv *graphviz.Graphviz
}

// theLayouter is the process's one layouter.
var theLayouter = sync.OnceValues(func() (*layouter, error) {
	// Note: not a request's context, which would end with the request.
	gv, err := graphviz.New(context.Background())
	if err != nil {
		return nil, fmt.Errorf("starting Graphviz: %w", err)
	}
	return &layouter{gv: gv}, nil
})

// layoutGraph places nodes left to right, each edge's To one rank right of
// its From where cycles allow, and routes the edges around the boxes.
func layoutGraph(ctx context.Context, nodes []layoutNode, edges []layoutEdge) (placement, error) {
	l, err := theLayouter()
	if err != nil {
		return placement{}, err
	}
	return l.layout(ctx, nodes, edges)
}

func (l *layouter) layout(ctx context.Context, nodes []layoutNode, edges []layoutEdge) (placement, error) {
	if len(nodes) == 0 {
		return placement{Boxes: []box{}, Routes: []route{}}, nil
	}
	dot, ends, err := toDOT(nodes, edges)
	if err != nil {
		return placement{}, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	g, err := graphviz.ParseBytes(dot)
	if err != nil {
		return placement{}, fmt.Errorf("parsing the graph for Graphviz: %w", err)
	}
	defer func() { _ = g.Close() }()
	var out bytes.Buffer
	// Note: a layout is short and must not stop half-way in the shared
	// module when a request ends.
	if err := l.gv.Render(context.WithoutCancel(ctx), g, "json", &out); err != nil {
		return placement{}, fmt.Errorf("laying out the graph: %w", err)
	}
	p, err := fromJSON(out.Bytes(), len(nodes), ends)
	if err != nil {
		return placement{}, err
	}
	return p, nil
}

// toDOT writes the graph in Graphviz's language. Note: no name or label
// from the hub goes into it: nodes are n<index>, and a label is as many
// "x" as it has characters, which sizes it the same in the monospace font
// the page draws labels in and leaves nothing for DOT to interpret.
// It also returns each edge's ends, as node indexes.
func toDOT(nodes []layoutNode, edges []layoutEdge) ([]byte, [][2]int, error) {
	index := make(map[string]int, len(nodes))
	ends := make([][2]int, 0, len(edges))
	var b strings.Builder
	fmt.Fprintf(&b, "digraph{rankdir=LR;nodesep=0.3;ranksep=0.5;pad=0;"+
		"node[shape=box,fontname=Courier,fontsize=%d,margin=\"0.17,0.1\",height=0.45];"+
		"edge[dir=none,fontname=Courier,fontsize=%d];\n", fontSize, edgeFontSize)
	for i, n := range nodes {
		index[n.Key] = i
		fmt.Fprintf(&b, "n%d[label=%q];\n", i, placeholder(n.Label))
	}
	for i, e := range edges {
		from, okFrom := index[e.From]
		to, okTo := index[e.To]
		if !okFrom || !okTo {
			return nil, nil, fmt.Errorf("edge %s -> %s names a node not in the graph", e.From, e.To)
		}
		ends = append(ends, [2]int{from, to})
		if e.Label == "" {
			fmt.Fprintf(&b, "n%d->n%d[id=%d];\n", from, to, i)
			continue
		}
		fmt.Fprintf(&b, "n%d->n%d[id=%d,label=%q];\n", from, to, i, placeholder(e.Label))
	}
	b.WriteString("}\n")
	return []byte(b.String()), ends, nil
}

func placeholder(label string) string {
	return strings.Repeat("x", max(1, utf8.RuneCountInString(label)))
}

// dotJSON is the part of Graphviz's "json" output the dashboard reads.
type dotJSON struct {
	BB      string `json:"bb"`
	Objects []struct {
		GVID   int    `json:"_gvid"`
		Name   string `json:"name"`
		Pos    string `json:"pos"`
		Width  string `json:"width"`  // inches
		Height string `json:"height"` // inches
	} `json:"objects"`
	Edges []struct {
		ID   string `json:"id"`
		Tail int    `json:"tail"`
		Head int    `json:"head"`
		Pos  string `json:"pos"`
		LP   string `json:"lp"`
	} `json:"edges"`
}

// fromJSON reads the positions Graphviz computed, in points with y up,
// into SVG coordinates (y down) with a margin.
// Edges are in Graphviz's order, named by their index in the id
// attribute; ends are each edge's ends, to check them.
func fromJSON(data []byte, nodes int, ends [][2]int) (placement, error) {
	edges := len(ends)
	var d dotJSON
	if err := json.Unmarshal(data, &d); err != nil {
		return placement{}, fmt.Errorf("reading the layout: %w", err)
	}
	bb := floats(d.BB)
	if len(bb) != 4 || len(d.Objects) != nodes || len(d.Edges) != edges {
		return placement{}, fmt.Errorf("the layout has %d nodes and %d edges, not %d and %d",
			len(d.Objects), len(d.Edges), nodes, edges)
	}
	top := bb[3]
	pt := func(x, y float64) (float64, float64) { return x - bb[0] + graphMargin, top - y + graphMargin }
	p := placement{Width: bb[2] - bb[0] + 2*graphMargin, Height: bb[3] - bb[1] + 2*graphMargin,
		Boxes: make([]box, nodes), Routes: make([]route, edges)}
	byGVID := map[int]int{}
	for _, o := range d.Objects {
		c, w, h := floats(o.Pos), floats(o.Width), floats(o.Height)
		i, err := strconv.Atoi(strings.TrimPrefix(o.Name, "n"))
		if len(c) != 2 || len(w) != 1 || len(h) != 1 || err != nil || i < 0 || i >= nodes {
			return placement{}, fmt.Errorf("reading the layout: node %q has no position", o.Name)
		}
		x, y := pt(c[0], c[1])
		byGVID[o.GVID] = i
		p.Boxes[i] = box{X: x - w[0]*36, Y: y - h[0]*36, W: w[0] * 72, H: h[0] * 72}
	}
	for _, e := range d.Edges {
		i, err := strconv.Atoi(e.ID)
		if err != nil || i < 0 || i >= edges || ends[i] != [2]int{byGVID[e.Tail], byGVID[e.Head]} {
			return placement{}, fmt.Errorf("reading the layout: unknown edge %q", e.ID)
		}
		r, err := splinePath(e.Pos, pt)
		if err != nil {
			return placement{}, err
		}
		if lp := floats(e.LP); len(lp) == 2 {
			r.LabelX, r.LabelY = pt(lp[0], lp[1])
		}
		p.Routes[i] = r
	}
	return p, nil
}

// splinePath turns Graphviz's edge "pos" (a start point, then three
// points per cubic Bézier) into an SVG path.
func splinePath(pos string, pt func(x, y float64) (float64, float64)) (route, error) {
	var points [][2]float64
	for _, f := range strings.Fields(pos) {
		if strings.HasPrefix(f, "e,") || strings.HasPrefix(f, "s,") {
			continue // arrowheads: the dashboard draws its own
		}
		c := floats(f)
		if len(c) != 2 {
			return route{}, fmt.Errorf("reading the layout: edge point %q", f)
		}
		x, y := pt(c[0], c[1])
		points = append(points, [2]float64{x, y})
	}
	if len(points) < 4 || (len(points)-1)%3 != 0 {
		return route{}, fmt.Errorf("reading the layout: an edge of %d points", len(points))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "M %s %s", num(points[0][0]), num(points[0][1]))
	for i := 1; i < len(points); i += 3 {
		fmt.Fprintf(&b, " C %s %s, %s %s, %s %s", num(points[i][0]), num(points[i][1]),
			num(points[i+1][0]), num(points[i+1][1]), num(points[i+2][0]), num(points[i+2][1]))
	}
	return route{Path: b.String()}, nil
}

// floats parses Graphviz's comma-separated numbers; nil if one is not.
func floats(s string) []float64 {
	if s == "" {
		return nil
	}
	var out []float64
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.ParseFloat(f, 64)
		if err != nil {
			return nil
		}
		out = append(out, v)
	}
	return out
}

// num prints a coordinate with at most two decimals.
func num(v float64) string { return strconv.FormatFloat(math.Round(v*100)/100, 'f', -1, 64) }
