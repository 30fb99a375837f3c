package proto

import (
	"bytes"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestGeneratedCodeIsCurrent regenerates into a temporary directory and
// compares with the committed .pb.go files, so that a .proto edit without
// `go generate ./proto/...` (or a drift in the pinned tools) fails CI.
func TestGeneratedCodeIsCurrent(t *testing.T) {
	if _, err := exec.LookPath("protoc"); err != nil {
		t.Fatal("protoc not found: `make tools` installs it (scripts/install-protoc.sh, Debian's protobuf-compiler)")
	}
	out := t.TempDir()
	cmd := exec.Command("./generate.sh", out)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("generate.sh: %v\n%s", err, stderr.String())
	}

	fresh := pbFiles(t, out)
	committed := pbFiles(t, ".")
	if len(fresh) == 0 {
		t.Fatal("generate.sh produced no .pb.go files")
	}
	for rel, want := range fresh {
		got, ok := committed[rel]
		switch {
		case !ok:
			t.Errorf("%s is not committed: run `go generate ./proto/...`", rel)
		case !bytes.Equal(got, want):
			if gv, wv := protocVersion(got), protocVersion(want); gv != wv {
				t.Errorf("%s was generated with protoc %s, this machine has %s: regenerate with Debian's protobuf-compiler (`make tools`)", rel, gv, wv)
				continue
			}
			t.Errorf("%s is stale: run `go generate ./proto/...`", rel)
		}
	}
	for rel := range committed {
		if _, ok := fresh[rel]; !ok {
			t.Errorf("%s has no .proto source any more: delete it", rel)
		}
	}
}

// pbFiles maps each .pb.go under root (relative, slash-separated) to its content.
func pbFiles(t *testing.T, root string) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".pb.go") {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		files[filepath.ToSlash(rel)] = b
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

var protocLine = regexp.MustCompile(`(?m)^//\s+protoc\s+(\S+)$`)

func protocVersion(src []byte) string {
	if m := protocLine.FindSubmatch(src); m != nil {
		return string(m[1])
	}
	return "unknown"
}
