package drift

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/rocklake/rocklake-migrate/pkg/blob"
	"github.com/rocklake/rocklake-migrate/pkg/catalog"
	"github.com/rocklake/rocklake-migrate/pkg/format"
	"github.com/rocklake/rocklake-migrate/pkg/inplace"
	"github.com/rocklake/rocklake-migrate/pkg/pointer"
	"github.com/rocklake/rocklake-migrate/pkg/slatedb"
)

// Kind is a finding's stable name.
type Kind string

// The kinds of finding (see the package doc).
const (
	KindPointerMissing          Kind = "PointerMissing"
	KindBadPointer              Kind = "BadPointer"
	KindDanglingPointer         Kind = "DanglingPointer"
	KindMissingVersionKey       Kind = "MissingVersionKey"
	KindBadVersionKey           Kind = "BadVersionKey"
	KindVersionMismatch         Kind = "VersionMismatch"
	KindPointerVersionDisagrees Kind = "PointerVersionDisagrees"
	KindLeftoverCheckpoint      Kind = "LeftoverCheckpoint"
	KindLeftoverStaging         Kind = "LeftoverStaging"
)

// Defaults of Options.
const (
	DefaultCheckpointMaxAge = 24 * time.Hour
	DefaultStagingMaxAge    = 24 * time.Hour
	// CheckpointPrefix starts the name of every checkpoint this tool makes.
	CheckpointPrefix = "rocklake-migrate"
)

// Options say what to check.
type Options struct {
	// Pointer is the pointer object's URL (required).
	Pointer string
	// Expect is the catalog format the deployed release expects (required).
	// It need not be one this binary supports: a release newer than the
	// checker is still compared against.
	Expect format.Version
	// Staging is the staging root of the migrations (e.g.
	// s3://bucket/staging); empty skips the staging check.
	Staging string
	// CheckpointMaxAge and StagingMaxAge: older checkpoints and staging are
	// leftovers. Zero means the defaults.
	CheckpointMaxAge time.Duration
	StagingMaxAge    time.Duration
	// Store tunes SlateDB's object-store access.
	Store slatedb.Options
	// Now is the time ages are measured from; zero means time.Now().
	Now time.Time
}

// Finding is one thing found wrong. Fields other than Kind and Message are
// set where they apply.
type Finding struct {
	Kind    Kind   `json:"kind"`
	Message string `json:"message"`

	Catalog  string         `json:"catalog,omitempty"`
	Found    format.Version `json:"found_version,omitempty"`
	Expected format.Version `json:"expected_version,omitempty"`

	CheckpointID   string     `json:"checkpoint_id,omitempty"`
	CheckpointName string     `json:"checkpoint_name,omitempty"`
	CreatedAt      *time.Time `json:"created_at,omitempty"`
	ExpiresAt      *time.Time `json:"expires_at,omitempty"`

	Prefix      string     `json:"prefix,omitempty"`
	MigrationID string     `json:"migration_id,omitempty"`
	Objects     int        `json:"objects,omitempty"`
	Bytes       int64      `json:"bytes,omitempty"`
	LastWritten *time.Time `json:"last_written,omitempty"`

	// AgeSeconds is how old the checkpoint or the newest staging object is.
	AgeSeconds int64 `json:"age_seconds,omitempty"`
}

// Report is the outcome of one check.
type Report struct {
	Pointer          string           `json:"pointer"`
	PointerVersionID string           `json:"pointer_version_id,omitempty"`
	Current          *pointer.Pointer `json:"current,omitempty"` // the pointer's content, if valid
	Catalog          string           `json:"catalog,omitempty"`
	// FoundVersion is the catalog's format; 0 when it could not be read.
	FoundVersion format.Version `json:"found_version"`
	Expected     format.Version `json:"expected_version"`
	Findings     []Finding      `json:"findings"`
	// FindingsOmitted counts findings left out to keep the report small
	// (pkg/notify trims to SNS's message size); 0 from Check.
	FindingsOmitted int       `json:"findings_omitted,omitempty"`
	Healthy         bool      `json:"healthy"`
	CheckedAt       time.Time `json:"checked_at"`
}

// Check runs the drift check. It returns an error only when it could not
// look; what it found is in the Report.
func Check(ctx context.Context, store *blob.Store, opts Options) (Report, error) {
	if opts.Pointer == "" {
		return Report{}, errors.New("drift: no pointer URL")
	}
	if opts.Expect == 0 {
		return Report{}, errors.New("drift: no expected format version")
	}
	now := opts.Now
	if now.IsZero() {
		now = time.Now()
	}
	now = now.UTC()
	c := checker{store: store, opts: opts, now: now,
		r: Report{Pointer: opts.Pointer, Expected: opts.Expect, Findings: []Finding{}, CheckedAt: now}}
	if err := c.run(ctx); err != nil {
		return Report{}, err
	}
	c.r.Healthy = len(c.r.Findings) == 0
	return c.r, nil
}

type checker struct {
	store *blob.Store
	opts  Options
	now   time.Time
	r     Report
}

func (c *checker) add(f Finding) { c.r.Findings = append(c.r.Findings, f) }

func (c *checker) run(ctx context.Context) error {
	p, ref, err := pointer.Read(ctx, c.store, c.opts.Pointer)
	switch {
	case errors.Is(err, pointer.ErrPointerMissing):
		c.add(Finding{Kind: KindPointerMissing, Message: fmt.Sprintf("there is no pointer at %s: RockLake has no catalog to open", c.opts.Pointer)})
		return c.staging(ctx, nil)
	case errors.Is(err, pointer.ErrBadPointer):
		c.r.PointerVersionID = ref.VersionID
		c.add(Finding{Kind: KindBadPointer, Message: err.Error()})
		return c.staging(ctx, nil)
	case err != nil:
		return fmt.Errorf("drift: %w", err)
	}
	c.r.PointerVersionID, c.r.Current, c.r.Catalog = ref.VersionID, &p, p.Catalog

	exists, err := c.catalog(ctx, p)
	if err != nil {
		return err
	}
	if exists {
		if err := c.checkpoints(ctx, p.Catalog, wayBack(p)); err != nil {
			return err
		}
	}
	return c.staging(ctx, &p)
}

// catalog opens the catalog read-only and records its version; it reports
// whether a database exists there.
func (c *checker) catalog(ctx context.Context, p pointer.Pointer) (bool, error) {
	cat, err := catalog.Open(ctx, p.Catalog, catalog.Options{Store: c.opts.Store})
	var mismatch *format.FormatVersionMismatch
	switch {
	case err == nil:
		c.r.FoundVersion = cat.Version()
		if cerr := cat.Close(); cerr != nil {
			return false, fmt.Errorf("drift: close %s: %w", p.Catalog, cerr)
		}
	case errors.Is(err, catalog.ErrNoCatalog), errors.Is(err, slatedb.ErrNoSuchBucket):
		c.add(Finding{Kind: KindDanglingPointer, Catalog: p.Catalog,
			Message: fmt.Sprintf("the pointer names %s, where there is no catalog (no SlateDB database): RockLake cannot start; restore the catalog or roll the pointer back", p.Catalog)})
		return false, nil
	case errors.As(err, &mismatch) && mismatch.Missing:
		c.add(Finding{Kind: KindMissingVersionKey, Catalog: p.Catalog, Expected: c.opts.Expect,
			Message: fmt.Sprintf("catalog %s has no catalog-format-version key: it is uninitialized (an import that never finished?) and no binary opens it", p.Catalog)})
		return true, nil
	case errors.As(err, &mismatch):
		// A format this binary does not know: still a version to compare.
		c.r.FoundVersion = format.Version(mismatch.Found)
	case isStoreError(err):
		return false, fmt.Errorf("drift: open %s: %w", p.Catalog, err)
	default:
		c.add(Finding{Kind: KindBadVersionKey, Catalog: p.Catalog,
			Message: fmt.Sprintf("catalog %s: the catalog-format-version key cannot be read: %v", p.Catalog, err)})
		return true, nil
	}
	found := c.r.FoundVersion
	if found != c.opts.Expect {
		c.add(Finding{Kind: KindVersionMismatch, Catalog: p.Catalog, Found: found, Expected: c.opts.Expect,
			Message: fmt.Sprintf("catalog %s is in format %s but the deployed release expects %s: RockLake refuses to open it (FormatVersionMismatch); migrate it (rocklake-migrate migrate --pointer %s --to %s) or roll the release back",
				p.Catalog, found, c.opts.Expect, c.opts.Pointer, c.opts.Expect)})
	}
	if p.FormatVersion != found {
		c.add(Finding{Kind: KindPointerVersionDisagrees, Catalog: p.Catalog, Found: found, Expected: p.FormatVersion,
			Message: fmt.Sprintf("the pointer says catalog %s is in format %s, but the catalog's catalog-format-version is %s: the pointer was written by hand or the catalog changed under it",
				p.Catalog, p.FormatVersion, found)})
	}
	return true, nil
}

// isStoreError tells failures to reach the catalog (which make the check
// fail) from a version key that cannot be decoded (a finding).
func isStoreError(err error) bool {
	var se *slatedb.Error
	return errors.As(err, &se) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// wayBack is the checkpoint an in-place migration keeps as its way back
// (pkg/inplace) if one wrote p, the pointer naming the same catalog as the
// one before it: while p is current that checkpoint is not a leftover.
func wayBack(p pointer.Pointer) string {
	if p.MigrationID == "" || p.Catalog != p.PreviousCatalog {
		return ""
	}
	return inplace.CheckpointName(p.MigrationID)
}

// checkpoints reports the tool's old checkpoints of the catalog at url, but
// keep.
func (c *checker) checkpoints(ctx context.Context, url, keep string) error {
	maxAge := cmp.Or(c.opts.CheckpointMaxAge, DefaultCheckpointMaxAge)
	cps, err := slatedb.ListCheckpoints(ctx, url, c.opts.Store)
	if err != nil {
		return fmt.Errorf("drift: list checkpoints of %s: %w", url, err)
	}
	slices.SortFunc(cps, func(a, b slatedb.Checkpoint) int {
		return cmp.Or(a.CreateTime.Compare(b.CreateTime), strings.Compare(a.ID, b.ID))
	})
	for _, cp := range cps {
		if !strings.HasPrefix(cp.Name, CheckpointPrefix) {
			continue // someone else's
		}
		if keep != "" && cp.Name == keep {
			continue // the current in-place migration's way back
		}
		age := c.now.Sub(cp.CreateTime)
		if age <= maxAge || cp.ExpireTime != nil && !cp.ExpireTime.After(c.now) {
			continue // young, or expired (garbage collection removes it)
		}
		created := cp.CreateTime.UTC()
		f := Finding{Kind: KindLeftoverCheckpoint, Catalog: url, CheckpointID: cp.ID, CheckpointName: cp.Name,
			CreatedAt: &created, AgeSeconds: int64(age / time.Second)}
		expiry := "never expires"
		if cp.ExpireTime != nil {
			e := cp.ExpireTime.UTC()
			f.ExpiresAt = &e
			expiry = "expires " + e.Format(time.RFC3339)
		}
		f.Message = fmt.Sprintf("catalog %s has checkpoint %s (%q), made %s ago, older than %s and %s: a migration left it behind; it keeps old files from garbage collection (delete it once no run uses it)",
			url, cp.ID, cp.Name, roundAge(age), maxAge, expiry)
		c.add(f)
	}
	return nil
}

type stagingGroup struct {
	id      string
	objects int
	bytes   int64
	newest  time.Time
}

// staging reports the migrations' staging directories untouched for
// longer than StagingMaxAge, except those of the current and previous
// pointer's migrations (p nil: none is excepted).
func (c *checker) staging(ctx context.Context, p *pointer.Pointer) error {
	if c.opts.Staging == "" {
		return nil
	}
	maxAge := cmp.Or(c.opts.StagingMaxAge, DefaultStagingMaxAge)
	root := strings.TrimSuffix(c.opts.Staging, "/") + "/"
	infos, err := c.store.List(ctx, root)
	if err != nil {
		return fmt.Errorf("drift: list staging %s: %w", root, err)
	}
	keep := map[string]bool{}
	if p != nil {
		for _, id := range []string{p.MigrationID, p.PreviousMigrationID} {
			if id != "" {
				keep[id] = true
			}
		}
	}
	groups := map[string]*stagingGroup{}
	var order []string
	for _, in := range infos {
		rest, ok := strings.CutPrefix(in.URL, root)
		if !ok {
			// A local root lists plain paths.
			if rest, ok = strings.CutPrefix("file://"+in.URL, root); !ok {
				continue
			}
		}
		id, _, _ := strings.Cut(rest, "/")
		if keep[id] {
			continue
		}
		g := groups[id]
		if g == nil {
			g = &stagingGroup{id: id}
			groups[id] = g
			order = append(order, id)
		}
		g.objects++
		g.bytes += in.Size
		if in.LastModified.After(g.newest) {
			g.newest = in.LastModified
		}
	}
	slices.Sort(order)
	for _, id := range order {
		g := groups[id]
		age := c.now.Sub(g.newest)
		if age <= maxAge {
			continue // a run may still be writing there
		}
		newest := g.newest.UTC()
		c.add(Finding{Kind: KindLeftoverStaging, Prefix: root + id + "/", MigrationID: id,
			Objects: g.objects, Bytes: g.bytes, LastWritten: &newest, AgeSeconds: int64(age / time.Second),
			Message: fmt.Sprintf("staging %s%s/ holds %d objects (%d bytes) last written %s ago, of a migration that is neither the current nor the previous pointer's: left by an aborted or abandoned run; delete it",
				root, id, g.objects, g.bytes, roundAge(age))})
	}
	return nil
}

func roundAge(d time.Duration) time.Duration {
	if d >= time.Minute {
		return d.Round(time.Minute)
	}
	return d.Round(time.Second)
}

// Kinds lists the kinds of the findings, in order, each once.
func (r Report) Kinds() []Kind {
	var ks []Kind
	for _, f := range r.Findings {
		if !slices.Contains(ks, f.Kind) {
			ks = append(ks, f.Kind)
		}
	}
	return ks
}

// Summary is one line: healthy, or how many findings of which kinds.
func (r Report) Summary() string {
	if r.Healthy {
		return fmt.Sprintf("healthy: %s in format %s, as the release expects", r.Catalog, r.Expected)
	}
	n := len(r.Findings) + r.FindingsOmitted
	kinds := make([]string, 0, len(r.Findings))
	for _, k := range r.Kinds() {
		kinds = append(kinds, string(k))
	}
	s := "s"
	if n == 1 {
		s = ""
	}
	return fmt.Sprintf("%d finding%s (%s)", n, s, strings.Join(kinds, ", "))
}

// Text renders the report for people.
func (r Report) Text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "drift check of %s at %s: %s\n", r.Pointer, r.CheckedAt.Format(time.RFC3339), r.Summary())
	if r.Current != nil {
		fmt.Fprintf(&b, "  pointer:  catalog %s, format %s", r.Current.Catalog, r.Current.FormatVersion)
		if r.Current.MigrationID != "" {
			fmt.Fprintf(&b, ", migration %s", r.Current.MigrationID)
		}
		if r.PointerVersionID != "" {
			fmt.Fprintf(&b, ", version %s", r.PointerVersionID)
		}
		b.WriteString("\n")
	}
	if r.Catalog != "" {
		found := "unknown"
		if r.FoundVersion != 0 {
			found = r.FoundVersion.String()
		}
		fmt.Fprintf(&b, "  catalog:  format %s, release expects %s\n", found, r.Expected)
	}
	for _, f := range r.Findings {
		fmt.Fprintf(&b, "  %s: %s\n", f.Kind, f.Message)
	}
	if r.FindingsOmitted > 0 {
		fmt.Fprintf(&b, "  (%d more findings omitted)\n", r.FindingsOmitted)
	}
	return b.String()
}
