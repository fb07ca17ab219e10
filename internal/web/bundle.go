package web

import (
	"fmt"
	"regexp"
	"strings"
)

// The page's JavaScript is written as ES modules (web/assets/*.js, each
// readable and testable on its own) and served as one file: bundle joins
// the modules an entry imports, each in its own function scope, in the
// order a browser would evaluate them. One request instead of one per
// module, without a build step or a tool outside Go.
//
// The modules keep to the few forms bundle understands, checked at start
// (a node refuses to start on anything else, and TestAssetsBundle runs it):
//
//	import { a, b as c } from "./name.js";   (one line, at the start of a line)
//	export function f(...) / export async function f / export function* f
//	export const x = ... / export class C ...
//
// No default export, no export list, no `export let` (bundled imports are
// copies, not live bindings), no namespace or dynamic import.

var (
	importLine = regexp.MustCompile(`^import\s*\{([^}]*)\}\s*from\s*"\./([a-z0-9-]+\.js)";\s*$`)
	exportDecl = regexp.MustCompile(`^export\s+((?:async\s+)?function\*?\s*([A-Za-z_$][\w$]*)|const\s+([A-Za-z_$][\w$]*)|class\s+([A-Za-z_$][\w$]*))`)
	importName = regexp.MustCompile(`^([A-Za-z_$][\w$]*)(?:\s+as\s+([A-Za-z_$][\w$]*))?$`)
	dynamicImp = regexp.MustCompile(`\bimport\s*\(`)
)

// module is one parsed source module.
type module struct {
	name    string   // "util.js"
	imports []imprt  // in source order
	exports []string // names
	body    []string // lines, import lines removed, "export " removed
}

type imprt struct {
	from  string      // "util.js"
	names [][2]string // {exported name, local name}
}

// parseModule reads one module's source.
func parseModule(name, src string) (*module, error) {
	m := &module{name: name}
	for i, line := range strings.Split(src, "\n") {
		at := func(format string, a ...any) error {
			return fmt.Errorf("%s:%d: %s", name, i+1, fmt.Sprintf(format, a...))
		}
		if dynamicImp.MatchString(line) {
			return nil, at("a dynamic import(): import the module at the top instead")
		}
		switch {
		case strings.HasPrefix(line, "import"):
			g := importLine.FindStringSubmatch(line)
			if g == nil {
				return nil, at(`an import bundle does not read: write import { a, b } from "./name.js"; on one line`)
			}
			im := imprt{from: g[2]}
			for _, part := range strings.Split(g[1], ",") {
				part = strings.TrimSpace(part)
				if part == "" {
					continue
				}
				n := importName.FindStringSubmatch(part)
				if n == nil {
					return nil, at("an imported name bundle does not read: %q", part)
				}
				local := n[1]
				if n[2] != "" {
					local = n[2]
				}
				im.names = append(im.names, [2]string{n[1], local})
			}
			m.imports = append(m.imports, im)
			continue
		case strings.HasPrefix(line, "export"):
			g := exportDecl.FindStringSubmatch(line)
			if g == nil {
				return nil, at("an export bundle does not read (export function, async function, const or class only)")
			}
			m.exports = append(m.exports, g[2]+g[3]+g[4])
			line = strings.TrimPrefix(line, "export ")
		}
		m.body = append(m.body, line)
	}
	return m, nil
}

// ident is the bundle's name of a module's exports object.
func ident(name string) string {
	return "m_" + strings.NewReplacer(".", "_", "-", "_").Replace(strings.TrimSuffix(name, ".js"))
}

// bundle joins entry and every module it imports (sources by file name)
// into one script: each module's body in a function scope that takes its
// imports from the modules evaluated before it and returns its exports.
func bundle(entry string, sources map[string]string) (string, error) {
	parsed := map[string]*module{}
	var order []*module
	state := map[string]int{} // 1: visiting, 2: done
	var visit func(name, from string) error
	visit = func(name, from string) error {
		switch state[name] {
		case 1:
			return fmt.Errorf("%s imports %s, which imports it back (bundle refuses cycles)", from, name)
		case 2:
			return nil
		}
		src, ok := sources[name]
		if !ok {
			return fmt.Errorf("%s imports %s, which does not exist", from, name)
		}
		m, err := parseModule(name, src)
		if err != nil {
			return err
		}
		parsed[name] = m
		state[name] = 1
		for _, im := range m.imports {
			if err := visit(im.from, name); err != nil {
				return err
			}
		}
		state[name] = 2
		order = append(order, m)
		return nil
	}
	if err := visit(entry, "the page"); err != nil {
		return "", err
	}
	var b strings.Builder
	b.WriteString("// attestd's web application: web/assets/*.js joined by web/bundle.go, one module per scope.\n")
	for _, m := range order {
		fmt.Fprintf(&b, "\n// ---- %s\nconst %s = (() => {\n", m.name, ident(m.name))
		for _, im := range m.imports {
			dep := parsed[im.from]
			var parts []string
			for _, n := range im.names {
				if !contains(dep.exports, n[0]) {
					return "", fmt.Errorf("%s imports %s from %s, which does not export it", m.name, n[0], im.from)
				}
				if n[0] == n[1] {
					parts = append(parts, n[0])
				} else {
					parts = append(parts, n[0]+": "+n[1])
				}
			}
			fmt.Fprintf(&b, "const { %s } = %s;\n", strings.Join(parts, ", "), ident(im.from))
		}
		b.WriteString(strings.Join(m.body, "\n"))
		fmt.Fprintf(&b, "\nreturn { %s };\n})();\n", strings.Join(m.exports, ", "))
	}
	return b.String(), nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
