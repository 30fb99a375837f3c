package layout

import (
	"errors"
	"fmt"
	"path"
	"regexp"
	"strings"
	"time"

	"github.com/rocklake/rocklake-migrate/pkg/blob"
	"github.com/rocklake/rocklake-migrate/pkg/format"
	"github.com/rocklake/rocklake-migrate/pkg/pointer"
)

// Beside the pointer.

// Lock is the one-migration-at-a-time lock of the pointer.
func Lock(pointerURL string) string { return pointerURL + ".lock" }

// HistoryDir is the prefix the run records of the pointer live under.
func HistoryDir(pointerURL string) string { return pointerURL + ".history/" }

// historyTime is fixed width, so that record names sort as their starts do.
const historyTime = "20060102T150405.000Z"

// HistoryRecord is the record of run id, started at start.
func HistoryRecord(pointerURL string, start time.Time, id string) string {
	return HistoryDir(pointerURL) + start.UTC().Format(historyTime) + "-" + id + ".json"
}

// HistoryRunID is the run id in a record's URL ("" for a name of another
// shape).
func HistoryRunID(url string) string {
	name := strings.TrimSuffix(path.Base(url), ".json")
	if len(name) <= len(historyTime)+1 || name[len(historyTime)] != '-' {
		return ""
	}
	return name[len(historyTime)+1:]
}

// ClaimsDir is the prefix the claims of the pointer live under.
func ClaimsDir(pointerURL string) string { return pointerURL + ".claims/" }

// Claim is the claim of migration id of the pointer.
func Claim(pointerURL, id string) string { return ClaimsDir(pointerURL) + id + ".json" }

// IsRecord reports whether a URL listed under HistoryDir or ClaimsDir
// names a record or claim (anything else there is not this tool's).
func IsRecord(url string) bool { return strings.HasSuffix(url, ".json") }

// sidecars are the directories kept beside a pointer, by suffix.
var sidecars = []string{".claims", ".history"}

// SidecarOwner is the name of the pointer whose claims or history
// directory is called name (OTHER.claims → OTHER); ok is false for any
// other directory.
func SidecarOwner(name string) (string, bool) {
	for _, suffix := range sidecars {
		if base, ok := strings.CutSuffix(name, suffix); ok && base != "" {
			return base, true
		}
	}
	return "", false
}

// PointerDir is the directory the pointer is in, ending in "/"; ok is
// false for a URL without one.
func PointerDir(pointerURL string) (string, bool) {
	i := strings.LastIndex(pointerURL, "/")
	if i < 0 {
		return "", false
	}
	return pointerURL[:i+1], true
}

// DefaultStaging is the staging root beside the pointer:
// s3://b/rocklake/CURRENT → s3://b/rocklake/migrations ("" when the URL
// has no directory).
func DefaultStaging(pointerURL string) string {
	dir, ok := PointerDir(pointerURL)
	if !ok {
		return ""
	}
	return dir + "migrations"
}

// Beside a fleet: its runs' records, beside the first source of its
// pointers (a prefix or a list): s3://b/tenants/ → s3://b/tenants.fleet/.

// FleetRuns is the prefix the records of a fleet's runs live under.
func FleetRuns(source string) string { return strings.TrimSuffix(source, "/") + ".fleet/" }

// FleetFailures counts the failed pointers of fleet run id, which each
// pointer's item reads before it starts (the failure limit); apart from
// the run records, under their prefix.
func FleetFailures(source, id string) string { return FleetRuns(source) + "failures/" + id + ".json" }

// IsFleetRun reports whether url, listed under a fleet's FleetRuns, is a
// fleet run's record (and not, say, its failures' count).
func IsFleetRun(url string) bool {
	i := strings.LastIndex(url, ".fleet/")
	return i >= 0 && !strings.Contains(url[i+len(".fleet/"):], "/") && HistoryRunID(url) != ""
}

// FleetStaging is the staging root of a fleet's runs when none is given:
// beside its first source, outside it (s3://b/tenants/ →
// s3://b/tenants.migrations), where every pointer's run keeps its staging
// under its own migration id.
func FleetStaging(source string) string { return strings.TrimSuffix(source, "/") + ".migrations" }

// FleetRun is the record of fleet run id, started at start: names sort as
// the starts do.
func FleetRun(source string, start time.Time, id string) string {
	return FleetRuns(source) + start.UTC().Format(historyTime) + "-" + id + ".json"
}

// Beside the catalog.

// ErrAtRoot: a catalog at the root of its bucket or file system has no place
// beside it for a migration's target, way back or replica.
var ErrAtRoot = errors.New("layout: catalog at the root of its bucket or file system")

// Target is where migration id to format v makes its new catalog: beside
// the source, <dir>/<v>-<id> (s3://b/catalogs/prod → s3://b/catalogs/v2-<id>).
// A source at a root is ErrAtRoot: beside a bucket root is another bucket,
// and beside "/" nothing, so the target would land inside the source.
func Target(source string, v format.Version, id string) (string, error) {
	dir, err := besideDir(source)
	if err != nil {
		return "", err
	}
	return dir + v.String() + "-" + id, nil
}

// TargetIn is where migration id to format v makes its new catalog when
// the run names a directory for it (target_prefix): <dir>/<v>-<id>.
func TargetIn(dir string, v format.Version, id string) string {
	return strings.TrimSuffix(dir, "/") + "/" + v.String() + "-" + id
}

// WayBack is where in-place migration id of source, in format from before
// it, copies the catalog as it was: the target name of a migration of that
// id to format from, <dir>/v<from>-<id>.
func WayBack(source string, from format.Version, id string) (string, error) {
	return Target(source, from, id)
}

// WayBackOf is the way back of the in-place migration that wrote p, if an
// in-place migration wrote it (p names the same catalog as the pointer
// before it): WayBack of p's catalog, migration and the format before p's.
func WayBackOf(p pointer.Pointer) (string, bool) {
	if p.MigrationID == "" || p.Catalog != p.PreviousCatalog || p.FormatVersion < 2 {
		return "", false
	}
	u, err := WayBack(p.Catalog, p.FormatVersion-1, p.MigrationID)
	return u, err == nil
}

// Replica is where migration id's Freeze copies the frozen source for the
// servers to read from while it is fenced: beside the source (a checkpoint
// copy stays in the source's bucket), <dir>/replica-<id>.
func Replica(source, id string) (string, error) {
	dir, err := besideDir(source)
	if err != nil {
		return "", err
	}
	return dir + "replica-" + id, nil
}

// besideDir is the directory, ending in "/", that holds catalog: where the
// targets, way backs and replicas of its migrations are made.
func besideDir(catalog string) (string, error) {
	loc, err := blob.Parse(catalog)
	if err != nil {
		return "", err
	}
	atRoot := strings.Trim(loc.Key, "/") == ""
	if !loc.IsS3() {
		atRoot = strings.Count(strings.Trim(loc.Path, "/"), "/") < 1
	}
	if atRoot {
		return "", fmt.Errorf("%w: %s", ErrAtRoot, catalog)
	}
	trimmed := strings.TrimSuffix(catalog, "/")
	return trimmed[:strings.LastIndex(trimmed, "/")+1], nil
}

// Checkpoints.

// CheckpointPrefix starts the name of every checkpoint this tool makes.
const CheckpointPrefix = "rocklake-migrate"

// ExportCheckpoint names the checkpoint an export makes for itself when
// it is given none (the CLI's export): the drift check leaves it to its
// expiry.
const ExportCheckpoint = CheckpointPrefix + "-export"

// FreezeCheckpoint names the checkpoint migration id's Freeze takes of its
// source.
func FreezeCheckpoint(id string) string { return CheckpointPrefix + "-" + id }

// RoundCheckpoint names the checkpoint round n of online migration id's
// catch-up takes of its source, and FenceCheckpoint the one its Fence
// takes: the Freeze checkpoint's name with a suffix, so that OfRun finds
// them all.
func RoundCheckpoint(id string, n int) string {
	return fmt.Sprintf("%s-round-%d", FreezeCheckpoint(id), n)
}

// FenceCheckpoint names the checkpoint online migration id's Fence takes.
func FenceCheckpoint(id string) string { return FreezeCheckpoint(id) + "-fence" }

// FenceReplicaCheckpoint names the checkpoint an online run's read replica
// is copied from.
func FenceReplicaCheckpoint(id string) string { return FenceCheckpoint(id) + "-replica" }

// OfRun reports whether the checkpoint called name is one migration id's
// run took of its source (Freeze's or Snapshot's, a round's, the Fence's).
func OfRun(name, id string) bool {
	return name == FreezeCheckpoint(id) || strings.HasPrefix(name, FreezeCheckpoint(id)+"-round-") ||
		name == FenceCheckpoint(id) || name == FenceReplicaCheckpoint(id)
}

// FlipCheckpoint names the checkpoints migration id's Flip pins both
// catalogs with (pointer.FlipPoint), the one flipped from and the one
// flipped to: kept while the pointer's current version is that flip's, so
// that a rollback finds what changed since. Not OfRun: a run's cleanup
// keeps them.
func FlipCheckpoint(id string) string { return CheckpointPrefix + "-flip-" + id }

// RestoreCheckpoint names the view an in-place restore takes of the
// catalog it restores, to carry what it took since the batch; it lives
// only while the restore reads it.
const RestoreCheckpoint = CheckpointPrefix + "-restore"

// InPlaceCheckpoint names the checkpoint in-place migration id's way back
// is copied from; it lives only while the copy is made.
func InPlaceCheckpoint(id string) string { return CheckpointPrefix + "-inplace-" + id }

// CheckpointOwner reports whether the checkpoint called name is this
// tool's, and what its name says after CheckpointPrefix and "-": the
// migration id of a Freeze's checkpoint, of an online run's rounds' and
// Fence's, and of a Flip's pins ("inplace-<id>" and "export" for the others).
func CheckpointOwner(name string) (string, bool) {
	if !strings.HasPrefix(name, CheckpointPrefix) {
		return "", false
	}
	owner, _ := strings.CutPrefix(name, CheckpointPrefix+"-")
	owner = strings.TrimPrefix(owner, "flip-")
	if i := strings.LastIndex(owner, "-round-"); i > 0 {
		owner = owner[:i]
	}
	return strings.TrimSuffix(strings.TrimSuffix(owner, "-replica"), "-fence"), true
}

// Shard files.

var shardName = regexp.MustCompile(`^shard-\d{5}-of-\d{5}\.ndjson(\.gz|\.zst)?$`)

// ShardFile is shard i of n's file name, with the compression suffix ("",
// "gz" or "zst").
func ShardFile(i, n int, compression string) string {
	name := fmt.Sprintf("shard-%05d-of-%05d.ndjson", i, n)
	if compression != "" {
		name += "." + compression
	}
	return name
}

// IsShardName reports whether name (no directory) is a shard file's.
func IsShardName(name string) bool { return shardName.MatchString(name) }

// IsShardFile reports whether url names a single shard file rather than a
// directory or prefix of them.
func IsShardFile(url string) bool {
	for _, suf := range []string{".ndjson", ".ndjson.gz", ".ndjson.zst"} {
		if strings.HasSuffix(url, suf) {
			return true
		}
	}
	return false
}

// Join puts a file name under a directory or S3 prefix.
func Join(dir, name string) string {
	if strings.HasPrefix(dir, "s3://") {
		return strings.TrimSuffix(dir, "/") + "/" + name
	}
	return path.Join(dir, name)
}
