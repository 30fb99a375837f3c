package main

import (
	"time"

	"github.com/spf13/pflag"

	"github.com/rocklake/rocklake-migrate/pkg/format"
	"github.com/rocklake/rocklake-migrate/pkg/runstate"
)

// pointerFlag adds the --pointer flag of the pointer commands.
func pointerFlag(fs *pflag.FlagSet) *string {
	return fs.String("pointer", "", "the pointer object: s3://bucket/key (versioned bucket)")
}

// rebuildFlags are the flags of a rebuild and of a new catalog's place,
// which migrate and plan share.
type rebuildFlags struct {
	rebuild   *bool
	targetDir *string
}

func newRebuildFlags(fs *pflag.FlagSet) rebuildFlags {
	return rebuildFlags{
		rebuild:   fs.Bool("rebuild", false, "move the catalog into a new one in its own format (compaction, relocation, another SlateDB release), with every step and guard of a migration; --to may be left out"),
		targetDir: fs.String("target-dir", "", "the directory of the new catalog, in any bucket (s3://other-bucket/catalogs/ makes s3://other-bucket/catalogs/v<N>-<id>); default: beside the source"),
	}
}

// version is --to, which a rebuild may leave out (0: the catalog's own
// format, which the pointer names).
func (r rebuildFlags) version(to string) (format.Version, error) {
	if *r.rebuild && to == "" {
		return 0, nil
	}
	v, err := format.ParseVersion(to)
	if err != nil {
		return 0, usagef("--to: %v", err)
	}
	return v, nil
}

func needPointer(url string) error {
	if url == "" {
		return usagef("--pointer is required")
	}
	return nil
}

// needPointerAndGrace checks the flags migrate and rollback both start
// from, --pointer and --freeze-grace, and returns the grace for the
// workflow's input (freezeGrace).
func needPointerAndGrace(url string, d time.Duration) (*float64, error) {
	if err := needPointer(url); err != nil {
		return nil, err
	}
	return freezeGrace(d)
}

// freezeGraceFlag adds --freeze-grace, the wait between the lock and the
// fence (workflow.CheckInput.FreezeGrace).
func freezeGraceFlag(fs *pflag.FlagSet) *time.Duration {
	return fs.Duration("freeze-grace", runstate.DefaultFreezeGrace, "wait this long after taking the lock before Freeze fences the source, so that `rocklake-migrate serve` supervisors switch RockLake to reader mode first (0: fence at once)")
}

// freezeGrace is the flag's value for the workflow's input.
func freezeGrace(d time.Duration) (*float64, error) {
	if d < 0 || d > runstate.MaxFreezeGrace {
		return nil, usagef("--freeze-grace %s: want 0 to %s", d, runstate.MaxFreezeGrace)
	}
	s := d.Seconds()
	return &s, nil
}
