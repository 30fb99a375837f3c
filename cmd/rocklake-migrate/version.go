package main

import (
	"context"
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/rocklake/rocklake-migrate/pkg/format"
	"github.com/rocklake/rocklake-migrate/pkg/slatedb"
)

// version is the tool's version, set by make build from git describe:
// -ldflags "-X main.version=...".
var version string

// toolVersion is version, or else what the Go toolchain recorded: the
// module version (go install pkg@v1.2.3) or the VCS revision.
func toolVersion() string {
	if version != "" {
		return version
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	var rev, dirty string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = "-dirty"
			}
		}
	}
	if rev != "" {
		return "devel-" + rev[:min(12, len(rev))] + dirty
	}
	return "devel"
}

// versionText is what --version and the version command print: the tool's
// version and build, the SlateDB engine it links and the catalog formats it
// reads and writes.
func versionText() string {
	var formats []string
	for _, v := range []format.Version{format.V1, format.V2} {
		if format.Supported(v) {
			formats = append(formats, fmt.Sprintf("%d (%s)", uint64(v), v))
		}
	}
	return fmt.Sprintf("rocklake-migrate %s\nbuild: %s %s/%s\nslatedb: %s\ncatalog formats: %s\n",
		toolVersion(), runtime.Version(), runtime.GOOS, runtime.GOARCH, slatedb.EngineVersion(), strings.Join(formats, ", "))
}

func newVersionCmd(e *env) *cobra.Command {
	c := &cobra.Command{
		Use:     "version",
		Short:   "print the tool's version and build, the SlateDB engine and the catalog formats it supports",
		Example: `  rocklake-migrate version`,
	}
	return setup(e, c, time.Minute, 0, func(context.Context, []string) error {
		fmt.Fprint(e.stdout, versionText())
		return nil
	})
}
