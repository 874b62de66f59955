package minigpt

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"example.org/minigpt/internal/testutil"
)

func TestSaveCheckpointIsAtomic(t *testing.T) {
	tr := ckptTrainer(t, ckptFuzzConfig(false), 1, nil)
	old := tr.Checkpoint()
	if _, err := tr.trainStep(); err != nil {
		t.Fatal(err)
	}
	newer := tr.Checkpoint()
	boom := errors.New("disk full")
	halfThenFail := func(w io.Writer, c *Checkpoint) error {
		var b bytes.Buffer
		if err := WriteCheckpoint(&b, c); err != nil {
			return err
		}
		w.Write(b.Bytes()[:b.Len()/2])
		return boom
	}
	bad := tr.Checkpoint()
	bad.Step = -1

	for _, tc := range []struct {
		name string
		save func(path string) error
		want error
	}{
		{"writer fails midway", func(p string) error { return saveCheckpoint(p, newer, halfThenFail) }, boom},
		{"invalid checkpoint", func(p string) error { return SaveCheckpoint(p, bad) }, ErrBadCheckpoint},
		{"rename onto a directory", func(p string) error {
			return SaveCheckpoint(filepath.Join(filepath.Dir(p), "sub"), newer)
		}, nil},
		{"missing directory", func(p string) error {
			return SaveCheckpoint(filepath.Join(filepath.Dir(p), "nowhere", "x.ckpt"), newer)
		}, fs.ErrNotExist},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "model.ckpt")
			if err := SaveCheckpoint(path, old); err != nil {
				t.Fatal(err)
			}
			if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
				t.Fatal(err)
			}
			want, _ := os.ReadFile(path)
			err := tc.save(path)
			if err == nil || (tc.want != nil && !errors.Is(err, tc.want)) {
				t.Fatalf("save = %v, want an error wrapping %v", err, tc.want)
			}
			if got, _ := os.ReadFile(path); !bytes.Equal(got, want) {
				t.Fatal("the failed save changed the previous checkpoint")
			}
			if fi, err := os.Stat(filepath.Join(dir, "sub")); err != nil || !fi.IsDir() {
				t.Fatalf("the directory in the way was disturbed: %v", err)
			}
			if names := testutil.DirNames(t, dir); !slices.Equal(names, []string{"model.ckpt", "sub"}) {
				t.Fatalf("directory holds %q after the failed save, want only model.ckpt and sub", names)
			}
			if names := testutil.DirNames(t, filepath.Join(dir, "sub")); len(names) != 0 {
				t.Fatalf("sub holds %q", names)
			}
		})
	}

	t.Run("replaces", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "model.ckpt")
		for _, c := range []*Checkpoint{old, newer} {
			if err := SaveCheckpoint(path, c); err != nil {
				t.Fatal(err)
			}
			got, err := LoadCheckpoint(path)
			if err != nil {
				t.Fatal(err)
			}
			if got.Step != c.Step || !testutil.BitsEqual(got.Model.Params(), c.Model.Params()) {
				t.Fatalf("loaded step %d, want %d with the same parameters", got.Step, c.Step)
			}
		}
		if names := testutil.DirNames(t, filepath.Dir(path)); !slices.Equal(names, []string{"model.ckpt"}) {
			t.Fatalf("directory holds %q, want only model.ckpt", names)
		}
	})
}

func TestLoadCheckpointErrors(t *testing.T) {
	dir := t.TempDir()
	good := encodeCheckpoint(t, ckptTrainer(t, ckptFuzzConfig(true), 1, nil).Checkpoint().WeightsOnly())
	trailing := filepath.Join(dir, "trailing.ckpt")
	if err := os.WriteFile(trailing, append(slices.Clone(good), 0), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadCheckpoint(trailing); !errors.Is(err, ErrBadCheckpoint) || !strings.Contains(err.Error(), "data after the checksum") {
		t.Fatalf("LoadCheckpoint with a trailing byte = %v", err)
	}
	missing := filepath.Join(dir, "missing.ckpt")
	if _, err := LoadCheckpoint(missing); !errors.Is(err, fs.ErrNotExist) || errors.Is(err, ErrBadCheckpoint) {
		t.Fatalf("LoadCheckpoint of a missing file = %v, want fs.ErrNotExist", err)
	}
}

// TestLoadCheckpointRefusesDamage: a checkpoint with any one byte
// flipped (in the header, the weights or the checksum), truncated or
// followed by extra bytes is refused with ErrBadCheckpoint; the intact
// file loads.
func TestLoadCheckpointRefusesDamage(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "m.ckpt")
	if err := SaveCheckpoint(path, fuzzSeedTrainer(t, false).Checkpoint().WeightsOnly()); err != nil {
		t.Fatal(err)
	}
	good, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := LoadCheckpoint(path); err != nil {
		t.Fatalf("the intact file: %v", err)
	}
	bad := filepath.Join(dir, "bad.ckpt")
	cases := map[string][]byte{
		"truncated":   good[:len(good)-1],
		"extra bytes": append(slices.Clone(good), 0),
	}
	for _, at := range []int{headerSize + 5, len(good) / 2, len(good) - 40, len(good) - 1} {
		b := slices.Clone(good)
		b[at] ^= 0x10
		cases[fmt.Sprintf("byte %d flipped", at)] = b
	}
	for name, b := range cases {
		if err := os.WriteFile(bad, b, 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := LoadCheckpoint(bad); !errors.Is(err, ErrBadCheckpoint) {
			t.Errorf("%s: LoadCheckpoint = %v, want ErrBadCheckpoint", name, err)
		}
	}
}
