package minigpt

// api_test.go keeps the public surface as small as the README says.

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// exportedNames counts the package's exported names as go doc lists
// them: package-level constants, variables, functions and types, the
// methods of exported types, and the exported fields of exported structs.
func exportedNames(t *testing.T) (pkg, methods, fields int) {
	t.Helper()
	fset := token.NewFileSet()
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if !d.Name.IsExported() {
					continue
				}
				if d.Recv == nil {
					pkg++
					continue
				}
				recv := d.Recv.List[0].Type
				if star, ok := recv.(*ast.StarExpr); ok {
					recv = star.X
				}
				if id, ok := recv.(*ast.Ident); ok && id.IsExported() {
					methods++
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.ValueSpec:
						for _, n := range s.Names {
							if n.IsExported() {
								pkg++
							}
						}
					case *ast.TypeSpec:
						if !s.Name.IsExported() {
							continue
						}
						pkg++
						if st, ok := s.Type.(*ast.StructType); ok {
							for _, fl := range st.Fields.List {
								for _, n := range fl.Names {
									if n.IsExported() {
										fields++
									}
								}
							}
						}
					}
				}
			}
		}
	}
	return pkg, methods, fields
}

// TestAPISize checks the README's figures for the public surface: the
// exported names and the lines of go doc -all may shrink, but growing
// past the figures the README states fails until the README says so.
func TestAPISize(t *testing.T) {
	md, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`The package exports (\d+) names \((\d+) at package level, (\d+) methods, (\d+)\s+struct fields\) and ` + "`go doc -all`" + ` prints (\d+) lines`).FindSubmatch(md)
	if m == nil {
		t.Fatal("the README no longer states the package's size as this test reads it")
	}
	want := make([]int, 5)
	for i := range want {
		want[i], _ = strconv.Atoi(string(m[i+1]))
	}
	pkg, methods, fields := exportedNames(t)
	if total := pkg + methods + fields; total > want[0] || pkg > want[1] || methods > want[2] || fields > want[3] {
		t.Errorf("the package exports %d names (%d at package level, %d methods, %d fields); the README says at most %d (%d, %d, %d)",
			total, pkg, methods, fields, want[0], want[1], want[2], want[3])
	}
	if want[0] != want[1]+want[2]+want[3] {
		t.Errorf("the README's figures do not add up: %d != %d + %d + %d", want[0], want[1], want[2], want[3])
	}
	out, err := exec.Command("go", "doc", "-all", ".").Output()
	if err != nil {
		t.Skipf("go doc: %v", err)
	}
	if lines := strings.Count(string(out), "\n"); lines > want[4] {
		t.Errorf("go doc -all prints %d lines; the README says at most %d", lines, want[4])
	}
}
