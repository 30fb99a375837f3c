package layout

import (
	"fmt"
	"strings"
	"time"

	"github.com/rocklake/rocklake-migrate/pkg/format"
)

// DecisionsDir holds the migrations' decision markers in staging
// (<staging>/decisions/<id>), kept on purpose: never a migration's staging.
const DecisionsDir = "decisions"

// The values of a decision marker: the two decisions a migration can take,
// once, and what a Flip that did not write the pointer leaves of its own.
const (
	DecisionFlip      = "flip"
	DecisionAbort     = "abort"
	DecisionWithdrawn = "withdrawn"
)

// Staging names the objects of one migration under <root>/<migration-id>/.
type Staging struct {
	Root        string // e.g. s3://bucket/staging
	MigrationID string
}

func (s Staging) root() string { return strings.TrimSuffix(s.Root, "/") }

func (s Staging) dir() string { return s.root() + "/" + s.MigrationID }

// Prefix is everything of this migration; Abort deletes it.
func (s Staging) Prefix() string { return s.dir() + "/" }

// planName is the object in the migration's staging where Freeze records
// its plan, which names the migration's pointer.
const planName = "plan.json"

// Plan is the plan Freeze writes and every later step reads.
func (s Staging) Plan() string { return s.dir() + "/" + planName }

// ShardDir holds the shard files of one format.
func (s Staging) ShardDir(v format.Version) string { return fmt.Sprintf("%s/%s", s.dir(), v) }

// rebuiltSuffix names a rebuild's import directory (ImportDir).
const rebuiltSuffix = "-rebuilt"

// ImportDir holds the shards Import reads, in format to: ShardDir(to), or
// in a rebuild (from == to) a directory of its own beside the source
// format's, since the export's audit copy and the identity transform's
// output are two files.
func (s Staging) ImportDir(from, to format.Version) string {
	if from == to {
		return s.ShardDir(to) + rebuiltSuffix
	}
	return s.ShardDir(to)
}

// Shard is shard i of n in format v.
func (s Staging) Shard(v format.Version, i, n int) string {
	return Join(s.ShardDir(v), ShardFile(i, n, "zst"))
}

// ImportShard is shard i of n in ImportDir(from, to).
func (s Staging) ImportShard(from, to format.Version, i, n int) string {
	return Join(s.ImportDir(from, to), ShardFile(i, n, "zst"))
}

// The per-shard results.
const (
	resultsDir      = "results/"
	exportResult    = "export"
	transformResult = "transform"
)

func (s Staging) result(step string, i int) string {
	return fmt.Sprintf("%s/%s%s-%05d.json", s.dir(), resultsDir, step, i)
}

// ExportResult is what the export of shard i found (records, digest).
func (s Staging) ExportResult(i int) string { return s.result(exportResult, i) }

// TransformResult is what the transform of shard i wrote.
func (s Staging) TransformResult(i int) string { return s.result(transformResult, i) }

// The whole-migration steps' results.
const (
	stepProbe       = "probe"
	stepImport      = "import"
	stepTargetClaim = "target-claim"
	stepVerify      = "verify"
	stepFlipIntent  = "flip-intent"
	stepGate        = "gate"
	stepOwner       = "owner"
)

func (s Staging) step(name string) string { return fmt.Sprintf("%s/%s.json", s.dir(), name) }

// Probe is the object Check writes and deletes to prove staging takes
// writes.
func (s Staging) Probe() string { return s.step(stepProbe) }

// Owner names the pointer whose run the staging is: Check writes it before
// anything else there, with If-None-Match, so that two pointers' runs that
// share a staging location and a migration id never share a directory.
func (s Staging) Owner() string { return s.step(stepOwner) }

// ImportResult is Import's progress and result.
func (s Staging) ImportResult() string { return s.step(stepImport) }

// TargetClaim records that Check claimed the target.
func (s Staging) TargetClaim() string { return s.step(stepTargetClaim) }

// VerifyResult is Verify's comparison.
func (s Staging) VerifyResult() string { return s.step(stepVerify) }

// FlipIntent is what Flip records before it writes the pointer.
func (s Staging) FlipIntent() string { return s.step(stepFlipIntent) }

// Round is online catch-up round n's record (n from 1): its views, what
// it found and the digest after it.
func (s Staging) Round(n int) string { return fmt.Sprintf("%s/rounds/round-%05d.json", s.dir(), n) }

// Overlays is where an online run's rounds keep their views' overlays (the
// source's WAL past a view's checkpoint, read once: native overlays.rs).
func (s Staging) Overlays() string { return s.dir() + "/overlays/" }

// Gate is the gate record of a migration waiting for approve or abort.
func (s Staging) Gate() string { return s.step(stepGate) }

const timingDir = "timing/"

// Timing is where an attempt of a timed step that ended at end keeps its
// time; index is the shard of a Map's item (nil for a whole-migration
// step).
func (s Staging) Timing(step string, index *int, end time.Time) string {
	name := step
	if index != nil {
		name = fmt.Sprintf("%s-%05d", step, *index)
	}
	return fmt.Sprintf("%s/%s%s-%d.json", s.dir(), timingDir, name, end.UnixNano())
}

// Decision holds the migration's one decision (DecisionFlip,
// DecisionAbort, DecisionWithdrawn). It is outside Prefix, so that Abort's
// cleanup keeps it: a Flip that somehow ran after an Abort still finds
// "abort" (the staging lifecycle expires it).
func (s Staging) Decision() string { return s.root() + "/" + DecisionsDir + "/" + s.MigrationID }

// ObjectKind is what an object in a migration's staging is.
type ObjectKind int

// The kinds of object Staging.Object recognises.
const (
	OtherObject ObjectKind = iota
	PlanObject
	VerifyObject
	ExportResultObject
	TransformResultObject
	TimingObject
	ImportShardObject
)

// Object is an object of a migration's staging, recognised by its name.
type Object struct {
	Kind ObjectKind
	// Index is a result's shard, -1 when its name holds none.
	Index int
	// Step is a timing's step.
	Step string
}

// Object recognises url, an object listed under Prefix; ImportShardObject
// needs from and to (zero to: never).
func (s Staging) Object(url string, from, to format.Version) Object {
	rel := strings.TrimPrefix(url, s.Prefix())
	switch {
	case rel == planName:
		return Object{Kind: PlanObject}
	case rel == stepVerify+".json":
		return Object{Kind: VerifyObject}
	case strings.HasPrefix(rel, resultsDir+exportResult+"-"):
		return Object{Kind: ExportResultObject, Index: resultIndex(rel, exportResult)}
	case strings.HasPrefix(rel, resultsDir+transformResult+"-"):
		return Object{Kind: TransformResultObject, Index: resultIndex(rel, transformResult)}
	case strings.HasPrefix(rel, timingDir):
		step, _, _ := strings.Cut(strings.TrimPrefix(rel, timingDir), "-")
		return Object{Kind: TimingObject, Step: step}
	case to != 0 && strings.HasPrefix(url, s.ImportDir(from, to)+"/"):
		return Object{Kind: ImportShardObject}
	}
	return Object{Kind: OtherObject}
}

// resultIndex is the shard of a result's name (rel, under Prefix), -1 if
// it names none.
func resultIndex(rel, step string) int {
	var i int
	if _, err := fmt.Sscanf(rel, resultsDir+step+"-%05d.json", &i); err != nil {
		return -1
	}
	return i
}
