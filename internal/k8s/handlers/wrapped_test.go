package handlers

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestEveryReconcilerIsQuiet: every controller the controller and the agent
// build (a builder chain ending in Complete) hands controller-runtime its
// reconciler wrapped in Quiet, so that a lost optimistic-lock race is requeued
// quietly instead of logged at ERROR as "Reconciler error".
func TestEveryReconcilerIsQuiet(t *testing.T) {
	dirs := []string{"../../../controllers", "../../agent"}
	found := 0
	for _, dir := range dirs {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			fset := token.NewFileSet()
			file, err := parser.ParseFile(fset, f, src, 0)
			if err != nil {
				t.Fatal(err)
			}
			ast.Inspect(file, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok {
					return true
				}
				sel, ok := call.Fun.(*ast.SelectorExpr)
				if !ok || sel.Sel.Name != "Complete" || len(call.Args) != 1 {
					return true
				}
				found++
				if !isQuiet(call.Args[0]) {
					t.Errorf("%s: Complete(%s): wrap the reconciler in handlers.Quiet", fset.Position(call.Pos()), src[call.Args[0].Pos()-1:call.Args[0].End()-1])
				}
				return true
			})
		}
	}
	if found < 7 {
		t.Fatalf("found %d Complete calls in %v; the test no longer sees the reconcilers", found, dirs)
	}
}

func isQuiet(e ast.Expr) bool {
	call, ok := e.(*ast.CallExpr)
	if !ok {
		return false
	}
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok || sel.Sel.Name != "Quiet" {
		return false
	}
	pkg, ok := sel.X.(*ast.Ident)
	return ok && pkg.Name == "handlers"
}
