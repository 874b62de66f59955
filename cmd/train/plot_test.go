package main

import (
	"context"
	"encoding/xml"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestPlotWritesSVGCurves(t *testing.T) {
	dir := t.TempDir()
	plot := filepath.Join(dir, "loss.svg")
	_, stderr, err := runTrain(context.Background(), tinyArgs(filepath.Join(dir, "m.ckpt"), "-steps", "12", "-eval-every", "4", "-plot", plot)...)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, stderr)
	}
	raw, err := os.ReadFile(plot)
	if err != nil {
		t.Fatal(err)
	}
	// Well-formed XML with two curves, axis labels and a legend.
	var doc struct {
		XMLName   xml.Name
		Polylines []struct {
			Points string `xml:"points,attr"`
		} `xml:"polyline"`
		Texts []string `xml:"text"`
	}
	if err := xml.Unmarshal(raw, &doc); err != nil {
		t.Fatalf("not well-formed SVG: %v", err)
	}
	if doc.XMLName.Local != "svg" || len(doc.Polylines) != 2 {
		t.Fatalf("root %q with %d polylines, want svg with 2 (training, validation)", doc.XMLName.Local, len(doc.Polylines))
	}
	if n := len(strings.Fields(doc.Polylines[0].Points)); n != 12 {
		t.Errorf("training curve has %d points, want one per step (12)", n)
	}
	if n := len(strings.Fields(doc.Polylines[1].Points)); n != 3 {
		t.Errorf("validation curve has %d points, want 3 (steps 4, 8, 12)", n)
	}
	all := strings.Join(doc.Texts, "|")
	for _, want := range []string{"step", "loss", "training loss", "validation loss"} {
		if !strings.Contains(all, want) {
			t.Errorf("no %q label in the plot", want)
		}
	}
	if fi, _ := os.Stat(plot); fi.Mode().Perm() != 0o644 {
		t.Errorf("plot mode %v, want 0644", fi.Mode().Perm())
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".plot-") {
			t.Errorf("temporary file %s left behind", e.Name())
		}
	}
}

func TestPlotIntoMissingDirectoryFails(t *testing.T) {
	dir := t.TempDir()
	_, _, err := runTrain(context.Background(), tinyArgs(filepath.Join(dir, "m.ckpt"), "-plot", filepath.Join(dir, "no", "such", "loss.svg"))...)
	if err == nil || !strings.Contains(err.Error(), "-plot") {
		t.Fatalf("err = %v, want a -plot error", err)
	}
}
