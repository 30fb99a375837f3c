package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/rocklake/rocklake-migrate/pkg/catalog"
	"github.com/rocklake/rocklake-migrate/pkg/format"
)

// kv is raw key-value access for experts and repair. Keys and values are
// hex. Every subcommand runs the startup check first, like every other
// command; --skip-version-check exists for the one repair the check itself
// prevents: fixing a missing, corrupt or wrong catalog-format-version key.
func newKVCmd(e *env) *cobra.Command {
	c := &cobra.Command{
		Use:   "kv get|scan|put|delete --catalog URL ...",
		Short: "raw key-value access in hex, for experts and repair: get, scan, put, delete",
		Example: `  rocklake-migrate kv scan --catalog s3://b/catalogs/prod --prefix fe
  rocklake-migrate kv get --catalog s3://b/catalogs/prod ff636174616c6f672d666f726d61742d76657273696f6e`,
	}
	return withSubcommands(c, newKVGetCmd(e), newKVScanCmd(e), newKVWriteCmd(e, "put", 2), newKVWriteCmd(e, "delete", 1))
}

// withSubcommands makes c a command of subcommands only: run without one,
// or with an unknown word, it is a usage error naming them (and the one
// meant, when a word is near one).
func withSubcommands(c *cobra.Command, subs ...*cobra.Command) *cobra.Command {
	var names []string
	for _, s := range subs {
		names = append(names, s.Name())
	}
	c.Args = cobra.ArbitraryArgs
	c.RunE = func(cmd *cobra.Command, args []string) error {
		if len(args) == 0 {
			return usagef("%s needs a subcommand: %s", c.Name(), strings.Join(names, ", "))
		}
		msg := fmt.Sprintf("%s: unknown subcommand %q (%s)", c.Name(), args[0], strings.Join(names, ", "))
		if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
			msg += fmt.Sprintf("; did you mean %s?", strings.Join(s, " or "))
		}
		return usageError{msg}
	}
	c.SuggestionsMinimumDistance = 2
	c.AddCommand(subs...)
	return c
}

type kvFlags struct {
	url       *string
	skipCheck *bool
}

func newKVFlags(fs *pflag.FlagSet) kvFlags {
	return kvFlags{
		url: catalogFlag(fs),
		skipCheck: fs.Bool("skip-version-check", false,
			"DANGEROUS: do not run the startup check. Only to repair the catalog-format-version key itself; "+
				"a wrong version key makes RockLake misread or refuse the whole catalog"),
	}
}

func (f kvFlags) options(e *env) catalog.Options {
	if *f.skipCheck {
		fmt.Fprintln(e.stderr, "rocklake-migrate kv: warning: --skip-version-check: the catalog's format version is not checked")
	}
	return catalog.Options{SkipVersionCheck: *f.skipCheck}
}

func hexArg(what, s string) ([]byte, error) {
	b, err := hex.DecodeString(s)
	if err != nil {
		return nil, usagef("%s %q is not hex: %v", what, s, err)
	}
	if what == "KEY" && len(b) == 0 {
		return nil, usagef("KEY must not be empty")
	}
	return b, nil
}

func newKVGetCmd(e *env) *cobra.Command {
	c := &cobra.Command{
		Use:     "get --catalog URL [--skip-version-check] KEY",
		Short:   "print the value of KEY (hex)",
		Example: `  rocklake-migrate kv get --catalog s3://b/catalogs/prod ff636174616c6f672d666f726d61742d76657273696f6e`,
	}
	kf := newKVFlags(c.Flags())
	return setup(e, c, defaultTimeout, 1, func(ctx context.Context, pos []string) error {
		return kvGet(ctx, e, kf, pos)
	})
}

// open checks --catalog and the hex argument of get and scan (what names
// it in an error), then opens the catalog to read it.
func (f kvFlags) open(ctx context.Context, e *env, what, arg string) (*catalog.Catalog, []byte, error) {
	if err := needCatalog(*f.url); err != nil {
		return nil, nil, err
	}
	b, err := hexArg(what, arg)
	if err != nil {
		return nil, nil, err
	}
	c, err := catalog.Open(ctx, *f.url, f.options(e))
	if err != nil {
		return nil, nil, err
	}
	return c, b, nil
}

func kvGet(ctx context.Context, e *env, kf kvFlags, pos []string) error {
	c, key, err := kf.open(ctx, e, "KEY", pos[0])
	if err != nil {
		return err
	}
	defer c.Close()
	v, err := c.GetRaw(ctx, key)
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "%x\n", v)
	return nil
}

func newKVScanCmd(e *env) *cobra.Command {
	c := &cobra.Command{
		Use:     "scan --catalog URL [--prefix HEX] [--skip-version-check]",
		Short:   "print every key and value (hex), or those under a prefix",
		Example: `  rocklake-migrate kv scan --catalog s3://b/catalogs/prod --prefix fe`,
	}
	kf := newKVFlags(c.Flags())
	prefixArg := c.Flags().String("prefix", "", "scan only keys starting with these bytes (hex)")
	return setup(e, c, defaultTimeout, 0, func(ctx context.Context, _ []string) error {
		return kvScan(ctx, e, kf, *prefixArg)
	})
}

func kvScan(ctx context.Context, e *env, kf kvFlags, prefixArg string) error {
	c, prefix, err := kf.open(ctx, e, "--prefix", prefixArg)
	if err != nil {
		return err
	}
	defer c.Close()
	w := bufio.NewWriter(e.stdout)
	for entry, err := range c.ScanPrefix(ctx, prefix) {
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "%x %x\n", entry.Key, entry.Value)
	}
	return w.Flush()
}

// newKVWriteCmd is put (nargs 2) and delete (nargs 1). They open the
// catalog as its writer, which fences a running RockLake writer: hence
// --force.
func newKVWriteCmd(e *env, name string, nargs int) *cobra.Command {
	c := &cobra.Command{
		Use:     name + " --catalog URL --force [--skip-version-check] [--version-key] KEY VALUE",
		Short:   "write VALUE under KEY (hex), checked against the key's shape and the catalog's format",
		Example: `  rocklake-migrate kv put --catalog file:///data/catalog --force fe01 0102`,
	}
	if nargs == 1 {
		c.Use = name + " --catalog URL --force [--skip-version-check] KEY"
		c.Short = "delete KEY (hex); never the catalog-format-version key"
		c.Example = `  rocklake-migrate kv delete --catalog file:///data/catalog --force fe01`
	}
	fs := c.Flags()
	kf := newKVFlags(fs)
	force := fs.Bool("force", false, "really write: opening the catalog's writer fences a running RockLake writer")
	versionKey := fs.Bool("version-key", false, "the KEY is catalog-format-version: change it (repair only; every binary reads the catalog by it)")
	return setup(e, c, defaultTimeout, nargs, func(ctx context.Context, pos []string) error {
		return kvWrite(ctx, e, name, kf, *force, *versionKey, pos)
	})
}

func kvWrite(ctx context.Context, e *env, name string, kf kvFlags, force, versionKey bool, pos []string) error {
	nargs := len(pos)
	if err := needCatalog(*kf.url); err != nil {
		return err
	}
	key, err := hexArg("KEY", pos[0])
	if err != nil {
		return err
	}
	isVersion := bytes.Equal(key, format.FormatVersionKey())
	if isVersion != versionKey {
		if isVersion {
			return usagef("kv %s of the catalog-format-version key needs --version-key: every binary reads the catalog by it", name)
		}
		return usagef("--version-key: KEY %x is not the catalog-format-version key", key)
	}
	if nargs == 1 && isVersion {
		return usagef("kv delete of the catalog-format-version key would leave an uninitialized catalog that nothing opens: put the right version instead")
	}
	var value []byte
	if nargs == 2 {
		if value, err = hexArg("VALUE", pos[1]); err != nil {
			return err
		}
	}
	if !force {
		return usagef("kv %s writes to the catalog as its writer, fencing a running RockLake writer: pass --force", name)
	}
	if nargs == 2 {
		return catalog.PutRaw(ctx, *kf.url, kf.options(e), key, value)
	}
	return catalog.DeleteRaw(ctx, *kf.url, kf.options(e), key)
}
