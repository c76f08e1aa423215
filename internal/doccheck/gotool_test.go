package doccheck_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

const modulePath = "github.com/eventlite/eventlite"

// TestMain removes the eventlite binary the CLI checks built.
func TestMain(m *testing.M) {
	code := m.Run()
	if cliPath != "" {
		os.RemoveAll(filepath.Dir(cliPath))
	}
	os.Exit(code)
}

// moduleRoot is the directory of go.mod, two levels up.
func moduleRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("no go.mod at the module root %s: %v", root, err)
	}
	return root
}

// goTool runs the go command in the module root and returns its stdout.
func goTool(t *testing.T, timeout time.Duration, args ...string) []byte {
	t.Helper()
	if testing.Short() {
		t.Skip("runs the go tool")
	}
	out, err := runGo(moduleRoot(t), timeout, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// runGo runs the go command in dir, without network: the module's
// dependencies are in go.sum and the module cache.
func runGo(dir string, timeout time.Duration, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=readonly", "GOPROXY=off")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return out, fmt.Errorf("go %s: %v\n%s", strings.Join(args, " "), err, stderr.Bytes())
	}
	return out, nil
}

// listedPackage is what `go list -json` says of a package.
type listedPackage struct {
	ImportPath string
	Name       string
	Dir        string
	GoFiles    []string
	Imports    []string
	Export     string
	Standard   bool
	Module     *struct{ Path string }
	Error      *struct{ Err string }
}

var (
	listOnce  sync.Once
	listed    map[string]*listedPackage
	listOrder []string // the module's own packages, as go list ./... orders them
	listErr   error
)

// goList lists the module's packages and every package they, the Go
// blocks of the docs and stdPrelude import, with their export data
// (built, or taken from the build cache): one go command for every
// checker.
func goList(t *testing.T) (map[string]*listedPackage, []string) {
	t.Helper()
	if testing.Short() {
		t.Skip("runs go list -export, which builds the module")
	}
	root := moduleRoot(t)
	listOnce.Do(func() {
		extra := slices.Clone(stdPrelude)
		for _, f := range markdownFiles(t, root) {
			bs, _ := goBlocks(readDoc(t, f))
			for _, b := range bs {
				for _, p := range blockImports(b.block.lines) {
					if !slices.Contains(extra, p) && !strings.HasPrefix(p, modulePath) {
						extra = append(extra, p)
					}
				}
			}
		}
		args := append([]string{"list", "-e", "-export", "-deps", "-json", "./..."}, extra...)
		out := goTool(t, 10*time.Minute, args...)
		listed = map[string]*listedPackage{}
		dec := json.NewDecoder(bytes.NewReader(out))
		for {
			var p listedPackage
			if err := dec.Decode(&p); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				listErr = err
				return
			}
			listed[p.ImportPath] = &p
			if p.ImportPath == modulePath || strings.HasPrefix(p.ImportPath, modulePath+"/") {
				listOrder = append(listOrder, p.ImportPath)
			}
		}
	})
	if listErr != nil {
		t.Fatal(listErr)
	}
	if listed == nil {
		t.Fatal("go list failed in an earlier test")
	}
	return listed, listOrder
}

// rel is an import path of the module relative to it ("store/postgres").
func rel(importPath string) string {
	return strings.TrimPrefix(strings.TrimPrefix(importPath, modulePath), "/")
}

var (
	cliOnce sync.Once
	cliPath string
	cliErr  string
)

// cli builds cmd/eventlite once per test binary and returns its path.
func cli(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds eventlite with the go tool")
	}
	root := moduleRoot(t)
	cliOnce.Do(func() {
		dir, err := os.MkdirTemp("", "doccheck-cli")
		if err != nil {
			cliErr = err.Error()
			return
		}
		path := filepath.Join(dir, "eventlite")
		if _, err := runGo(root, 10*time.Minute, "build", "-o", path, "./cmd/eventlite"); err != nil {
			cliErr = err.Error()
			return
		}
		cliPath = path
	})
	if cliErr != "" {
		t.Fatal(cliErr)
	}
	return cliPath
}

// help runs `eventlite help [COMMAND]` and returns what it printed.
func help(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command(cli(t), append([]string{"help"}, args...)...)
	cmd.Dir = t.TempDir()
	cmd.Env = []string{"HOME=" + cmd.Dir}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("eventlite help %s: %v\n%s", strings.Join(args, " "), err, stderr.Bytes())
	}
	return stdout.String()
}
