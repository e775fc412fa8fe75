package healthroute

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestDocCommentsNameDeclaredIdentifiers fails on a doc comment that names an
// identifier its package does not declare: a renamed or removed function whose
// comments still send readers looking for it. It reads what a doc comment names
// unambiguously: its leading word when that is written in mixedCase (newResolver,
// ReserveFDs) or its own name in another case (the name before it was exported),
// a backquoted identifier (`Resolver`, `routing.New`), a doc link
// ([Config], [routing.Resolver]) and a qualified name (health.Scheduler). A
// qualified name is checked in the package of this module it names; names of other
// packages are not checked.
func TestDocCommentsNameDeclaredIdentifiers(t *testing.T) {
	byDir := map[string]map[string]bool{} // declared names, by package directory
	var dirs []string
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != "." && (strings.HasPrefix(d.Name(), ".") || strings.HasPrefix(d.Name(), "_") || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() {
			dirs = append(dirs, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]*ast.File{}
	fset := token.NewFileSet()
	for _, dir := range dirs {
		ents, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range ents {
			if e.IsDir() || !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
				continue // a test's names are not its package's
			}
			f, err := parser.ParseFile(fset, filepath.Join(dir, e.Name()), nil, parser.ParseComments)
			if err != nil {
				t.Fatal(err)
			}
			files[dir] = append(files[dir], f)
		}
		if len(files[dir]) == 0 {
			continue
		}
		byDir[dir] = declaredNames(files[dir])
	}
	if len(byDir["."]) == 0 || len(byDir["routing"]) == 0 {
		t.Fatal("the plugin's or the routing package's files were not found: the walk missed them")
	}
	for _, dir := range dirs {
		for _, f := range files[dir] {
			for _, d := range docComments(f) {
				if w, _, _ := strings.Cut(strings.TrimSpace(d.doc), " "); w != d.of && strings.EqualFold(w, d.of) {
					t.Errorf("%s: the doc comment of %s starts with %s, the name before it was exported or unexported", fset.Position(d.pos), d.of, w)
				}
				for _, name := range namedIn(d.doc, imports(f)) {
					pkg, id, qualified := strings.Cut(name, ".")
					known := byDir[dir]
					if qualified {
						if known = byDir[imports(f)[pkg]]; known == nil {
							continue // not a package of this module that the file imports
						}
					} else {
						id = pkg
					}
					if !known[id] {
						t.Errorf("%s: the doc comment of %s names %s, which its package does not declare", fset.Position(d.pos), d.of, name)
					}
				}
			}
		}
	}
}

// declaredNames returns every name files declare at package level, with the
// methods, struct fields and interface methods of their types.
func declaredNames(files []*ast.File) map[string]bool {
	names := map[string]bool{}
	for _, f := range files {
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.FuncDecl:
				names[n.Name.Name] = true
			case *ast.TypeSpec:
				names[n.Name.Name] = true
			case *ast.ValueSpec:
				for _, id := range n.Names {
					names[id.Name] = true
				}
			case *ast.Field:
				for _, id := range n.Names {
					names[id.Name] = true
				}
				if len(n.Names) == 0 { // embedded: the type's name
					typ := n.Type
					if s, ok := typ.(*ast.StarExpr); ok {
						typ = s.X
					}
					switch x := typ.(type) {
					case *ast.Ident:
						names[x.Name] = true
					case *ast.SelectorExpr:
						names[x.Sel.Name] = true
					}
				}
			}
			return true
		})
	}
	return names
}

// docComment is a declaration's doc comment.
type docComment struct {
	of  string // the declared name
	doc string
	pos token.Pos
}

// docComments returns the doc comments of f's declarations, and of each spec of a
// grouped declaration.
func docComments(f *ast.File) []docComment {
	var out []docComment
	add := func(of string, g *ast.CommentGroup) {
		if g != nil {
			out = append(out, docComment{of, g.Text(), g.Pos()})
		}
	}
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			add(d.Name.Name, d.Doc)
		case *ast.GenDecl:
			for _, s := range d.Specs {
				switch s := s.(type) {
				case *ast.TypeSpec:
					add(s.Name.Name, specDoc(s.Doc, d.Doc, len(d.Specs)))
				case *ast.ValueSpec:
					add(s.Names[0].Name, specDoc(s.Doc, d.Doc, len(d.Specs)))
				}
			}
		}
	}
	return out
}

// specDoc is a spec's doc comment: its own, or its declaration's when it is the only spec.
func specDoc(spec, decl *ast.CommentGroup, specs int) *ast.CommentGroup {
	if spec != nil || specs > 1 {
		return spec
	}
	return decl
}

var (
	backquoted = regexp.MustCompile("`([A-Za-z_][A-Za-z0-9_]*(?:\\.[A-Za-z_][A-Za-z0-9_]*)?)`")
	docLink    = regexp.MustCompile(`\[([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)?)\]`)
	mixedCase  = regexp.MustCompile(`^[a-zA-Z][a-z0-9]*[A-Z][A-Za-z0-9]*$`)
	qualified  = regexp.MustCompile(`(?:^|[^\w./])([a-z][a-z0-9]*\.[A-Z][A-Za-z0-9_]*)`)
	goIdent    = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
)

// modulePath is this module's import path, for imports.
const modulePath = "github.com/healthroute/healthroute"

// imports maps the names f imports this module's packages under to their
// directories.
func imports(f *ast.File) map[string]string {
	m := map[string]string{}
	for _, im := range f.Imports {
		p := strings.Trim(im.Path.Value, `"`)
		rel, ok := strings.CutPrefix(p, modulePath+"/")
		if !ok {
			continue
		}
		name := filepath.Base(rel)
		if im.Name != nil {
			name = im.Name.Name
		}
		m[name] = rel
	}
	return m
}

// namedIn returns the identifiers doc names unambiguously: its leading word when it
// is written in mixedCase, backquoted identifiers that are not lower-case words
// (those are Corefile keywords: `ttl`, `record`) or upper-case ones (placeholders:
// `NAME`), doc links read alike, and names qualified by one of pkgs, the module's packages the
// file imports (routing.New).
func namedIn(doc string, pkgs map[string]string) []string {
	var out []string
	if w, _, _ := strings.Cut(strings.TrimSpace(doc), " "); mixedCase.MatchString(w) && goIdent.MatchString(w) {
		out = append(out, w)
	}
	for _, m := range backquoted.FindAllStringSubmatch(doc, -1) {
		if m[1] != strings.ToLower(m[1]) && m[1] != strings.ToUpper(m[1]) { // not a Corefile keyword or placeholder
			out = append(out, m[1])
		}
	}
	for _, m := range docLink.FindAllStringSubmatch(doc, -1) {
		if m[1] != strings.ToLower(m[1]) && m[1] != strings.ToUpper(m[1]) {
			out = append(out, m[1])
		}
	}
	for _, m := range qualified.FindAllStringSubmatch(doc, -1) {
		if pkg, _, _ := strings.Cut(m[1], "."); pkgs[pkg] != "" {
			out = append(out, m[1])
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}
