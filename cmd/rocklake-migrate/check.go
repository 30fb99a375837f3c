package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/rocklake/rocklake-migrate/pkg/catalog"
	"github.com/rocklake/rocklake-migrate/pkg/format"
)

// checkResult is check's --json output. FormatVersion is null for a catalog
// without a version key; Expected is null when any supported format goes.
type checkResult struct {
	FormatVersion *uint64  `json:"format_version"`
	Expected      *uint64  `json:"expected"`
	Supported     []uint64 `json:"supported_versions"`
	OK            bool     `json:"ok"`
	SQLState      string   `json:"sqlstate,omitempty"`
	Error         string   `json:"error,omitempty"`
}

func newCheckCmd(e *env) *cobra.Command {
	c := &cobra.Command{
		Use:   "check --catalog URL [--expect V] [--json]",
		Short: "run the startup check: print the catalog's format version, exit 3 on a mismatch",
		Example: `  rocklake-migrate check --catalog s3://b/catalogs/prod --expect v1
  rocklake-migrate check --catalog file:///data/catalog --json`,
	}
	fs := c.Flags()
	url := catalogFlag(fs)
	expect := fs.String("expect", "", "format the catalog must be in (v1, v2); default: any this binary supports")
	asJSON := jsonFlag(fs, "print a JSON object, also on a mismatch")
	return setup(e, c, defaultTimeout, 0, func(ctx context.Context, args []string) error {
		if err := needCatalog(*url); err != nil {
			return err
		}
		res := checkResult{Supported: []uint64{uint64(format.V1), uint64(format.V2)}}
		var want format.Version
		if *expect != "" {
			v, err := format.ParseVersion(*expect)
			if err != nil {
				return usagef("--expect: %v", err)
			}
			want = v
			res.Expected = ptr(uint64(v))
		}
		c, err := catalog.Open(ctx, *url, catalog.Options{Expect: want})
		var mismatch *format.FormatVersionMismatch
		switch {
		case err == nil:
			defer c.Close()
			res.FormatVersion, res.OK = ptr(uint64(c.Version())), true
		case errors.As(err, &mismatch):
			if !mismatch.Missing {
				res.FormatVersion = ptr(mismatch.Found)
			}
			res.SQLState, res.Error = mismatch.SQLState(), err.Error()
		default:
			return err
		}
		if *asJSON {
			out, _ := json.Marshal(res) // plain fields always marshal
			fmt.Fprintf(e.stdout, "%s\n", out)
		} else if err == nil {
			fmt.Fprintf(e.stdout, "catalog format version %d (%s): ok\n", c.Version(), c.Version())
		}
		return err
	})
}

func ptr[T any](v T) *T { return &v }
