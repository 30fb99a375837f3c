// Package estimate owns what `plan` predicts of a migration before it runs:
// its duration, from the stage rates the project measured, and its AWS cost
// (Lambda GB-seconds and requests, Step Functions state transitions, S3
// requests and storage), from list prices. Every figure is a constant here
// with where it came from; an estimate lists the assumptions it made.
package estimate

import (
	"encoding/json"
	"fmt"
	"math"

	"github.com/rocklake/rocklake-migrate/statemachine"
)

// Stage rates, per worker (a Lambda, or one of the CLI's --concurrency), from
// the measurements of 2026-12-02 in docs/performance-history.md (1 000 000
// rows, 16 shards, versitygw, 2 cores): Verify 2.3 s (scripts/bench-migrate.sh),
// Check 0.05 s, Finalize 0.1 s, Flip 0.1 s, and Freeze 0.4 s besides its scan;
// Import's from 2026-12-03 (below).
const (
	// ShardRowsPerSec is ExportTransformShard's rate (export and
	// transform in one pass, both shard files written) on one core:
	// BenchmarkShardStep/fused, 9.6 CPU-seconds per 1 000 000 rows (median
	// after the raw-bytes path and zstd's fastest level; 15.1 before).
	ShardRowsPerSec  = 104_000
	VerifyRowsPerSec = 435_000
	// Import's rate falls as the catalog grows: its compactions rewrite
	// every byte once per size tier (ImportPasses). ImportRowsPerSec is
	// measured with one pass (10 000 000 rows, 2026-12-03, file://, 2
	// cores: 76.6 s); each further pass costs what ImportPassRowsPerSec
	// says, from the same catalog imported with the engine's fan-in of
	// 4-8 (three passes, 126.6 s, 52 CPU-s more).
	ImportRowsPerSec     = 130_000
	ImportPassRowsPerSec = 690_000
	// The bulk load's compactions (native/src/store.rs): 16 sources at a
	// time, from L0 SSTs of L0Bytes, so the first pass makes runs of
	// ImportFanIn x L0Bytes and each further one runs ImportFanIn times
	// larger.
	ImportFanIn = 16
	// ScanRowsPerSec is SlateDB 0.13.1's full scan on versitygw
	// (docs/performance.md, the SlateDB binding table): Freeze's byte-balancing scan, which gives up
	// after ScanGiveUpSeconds when its rate says it would not end within
	// ScanBudgetSeconds (pkg/workflow's byteScanBudget and projection).
	ScanRowsPerSec    = 286_000
	ScanBudgetSeconds = 120
	ScanGiveUpSeconds = 6
	// Freeze cuts the shards from the compacted SSTs' block indexes when
	// they can be trusted (pkg/shard PlanByBlocks): one ranged read of
	// each SST's index, 16 SSTs at a time, whatever the rows, priced as
	// BlockReadsPerSST reads (an upper bound, retries included).
	// BenchmarkFreezePlan, 2026-12-03, versitygw, load 7-9: 6 SSTs
	// (1 000 000 rows) in 0.06 s, 9 (3 000 000) in 0.11 s, about 0.1 s a
	// wave of 16 large SSTs; BlockSSTsPerSec rounds that down.
	BlockReadsPerSST = 2
	BlockSSTsPerSec  = 75
	// ReplicaBytesPerSec is Freeze's read replica copy (server side, 8
	// objects at a time): BenchmarkFreezePlan/replica, 2026-12-03,
	// versitygw, 1 000 000 rows: 81 MiB in 14 objects in 0.17 s (465
	// MiB/s), 100 000 rows: 7.9 MiB in 0.056 s. S3's CopyObject within a
	// bucket was not measured here; this is a quarter of the local rate.
	ReplicaBytesPerSec = 120 << 20
	// AckSeconds is a supervisor's acknowledgement of a fence: the
	// writer's stop, a copy of the catalog and a reader's start (1.2-1.6 s
	// measured with the real RockLake on a small catalog, 2026-12-04); a
	// plan counts it, at most the run's freeze_grace.
	AckSeconds      = 2.0
	CheckSeconds    = 0.05
	FreezeSeconds   = 0.4
	FinalizeSeconds = 0.1
	FlipSeconds     = 0.1
	// ShardStepSeconds is what an ExportTransformShard costs
	// whatever its rows (opening the source or shard, the plan, the
	// results). Measured 2026-12-02 on the 2-core machine under heavy load:
	// 16 shards instead of 1 of the same 100 097-key catalog added 0.36 s of
	// export and 0.41 s of transform per extra shard while the 1-shard rates
	// ran at half docs/performance.md's; halved to its conditions.
	ShardStepSeconds = 0.2
)

// An online run's states (pkg/workflow online.go), from BenchmarkOnlineMigration
// (2026-12-03, file://, 2 cores, the real RockLake committing every 100 ms,
// 1 000 000 and 3 000 000 rows): Fence 0.10-0.15 s, the last round 0.06-0.11
// s (5 candidate keys), Verify after the fence 0.10-0.18 s, whatever the
// rows. VerifyCatchUp digests the target and the source's view at once, each
// at VerifyRowsPerSec.
const (
	FenceSeconds        = 0.15
	RoundSeconds        = 0.1
	OnlineVerifySeconds = 0.15
	// OnlineRounds is the least run: two rounds before the fence (the
	// second after VerifyCatchUp) and the last after it.
	OnlineRounds = 3
)

// Lambda memory per function, MB: infra/config.go's defaults (check 1024;
// export and transform shardMemoryMb 3008; import max(shardMemoryMb, 4096)).
const (
	CheckMemoryMB     = 1024
	ShardMemoryMB     = 3008
	ImportMemoryMB    = 4096
	ImportCallSeconds = 840 // an Import call returns a minute before its 900 s Lambda deadline
)

// AWS list prices, us-east-1, USD, first tiers, no free tier: x86 Lambda,
// Standard workflows, S3 Standard. Checked 2026-12-02 against the public
// pages: Lambda $0.0000166667 per GB-s and $0.20 per million requests
// (docs.aws.amazon.com, "How AWS Pricing Works"), Step Functions $0.025 per
// 1 000 transitions (aws.amazon.com/step-functions/pricing); the S3 figures
// are aws.amazon.com/s3/pricing's long-standing ones ($0.005 per 1 000 PUT,
// COPY, POST or LIST, $0.0004 per 1 000 GET, $0.023 per GB-month), not
// re-checked. Not fetched at run time: check them before budgeting.
const (
	PricesDate          = "2026-12"
	LambdaGBSecondUSD   = 0.0000166667
	LambdaRequestUSD    = 0.20 / 1e6
	TransitionUSD       = 0.025 / 1000
	S3WriteRequestUSD   = 0.005 / 1000 // PUT, COPY, POST, LIST
	S3ReadRequestUSD    = 0.0004 / 1000
	S3StorageGBMonthUSD = 0.023
)

// S3 shapes the request counts follow: the shard writer's multipart part
// (pkg/blob), the import writer's L0 flushes (pkg/slatedb's bulk-load
// profile moves its memtable to L0 every 8 MiB) and how long staging is kept
// (infra's stagingExpireDays).
const (
	PartBytes         = 8 << 20
	L0Bytes           = 8 << 20
	StagingDays       = 7
	perShardSmallPuts = 4 // export and transform results, timings
)

// Input is what a plan measured and chose.
type Input struct {
	Rows        uint64  // keys in the catalog
	Bytes       int64   // their keys' and values' bytes
	StoredBytes int64   // the catalog's objects in S3
	Objects     int     // how many
	Shards      int     //
	Concurrency int     // shards worked on at once (the Map's, or --concurrency)
	Imbalance   float64 // largest shard over the mean (1 for even shards)
	// SSTs is the catalog's compacted SSTs when Freeze cuts the shards by
	// their block indexes; 0: by the byte scan.
	SSTs   int
	DryRun bool
	// FreezeGraceSeconds is Freeze's wait between the lock and the fence,
	// for the servers' supervisors to switch to reader mode (none in a dry
	// run, which fences nothing).
	FreezeGraceSeconds float64
	// ReadReplica: Freeze copies the frozen catalog (StoredBytes) into a
	// read replica for the servers (none in a dry run); an online run's
	// Fence, inside the write freeze.
	ReadReplica bool
	// Online: the copy runs while RockLake commits (Snapshot, CatchUp
	// rounds, VerifyCatchUp, Fence), the write freeze only from the fence.
	Online bool
	// ShardBytesRatio is the shard files' bytes over the catalog's bytes
	// (compressed NDJSON); 0 takes DefaultShardBytesRatio.
	ShardBytesRatio float64
	// Definition is the state machine (statemachine/migration.asl.json),
	// whose transitions are counted for Shards.
	Definition []byte
}

// DefaultShardBytesRatio is zstd NDJSON shards' size over the keys' and
// values' bytes: measured 2026-12-02 on a seeded 100 097-key catalog (7.7 MiB
// of keys and values, 2.16 MB of format-2 shards).
const DefaultShardBytesRatio = 0.27

// Estimate is the prediction.
type Estimate struct {
	// Seconds is the wall time per state, and in all.
	Seconds      map[string]float64 `json:"seconds"`
	TotalSeconds float64            `json:"total_seconds"`
	// WriteFreezeSeconds: from the fence to the pointer's write, RockLake's
	// commits are refused (none in a dry run, which fences nothing).
	WriteFreezeSeconds float64 `json:"write_freeze_seconds"`
	Lambda             struct {
		Invocations int     `json:"invocations"`
		GBSeconds   float64 `json:"gb_seconds"`
		USD         float64 `json:"usd"`
	} `json:"lambda"`
	StepFunctions struct {
		Transitions int     `json:"transitions"`
		USD         float64 `json:"usd"`
	} `json:"step_functions"`
	S3 struct {
		WriteRequests int     `json:"write_requests"`
		ReadRequests  int     `json:"read_requests"`
		StagingGB     float64 `json:"staging_gb"`
		TargetGB      float64 `json:"target_gb"`
		USD           float64 `json:"usd"`
		// TargetUSDPerMonth is the new catalog's storage while both are kept.
		TargetUSDPerMonth float64 `json:"target_usd_per_month"`
	} `json:"s3"`
	TotalUSD    float64  `json:"total_usd"`
	PricesDate  string   `json:"prices_date"`
	Assumptions []string `json:"assumptions"`
}

// Run estimates a migration's duration and cost.
func Run(in Input) (Estimate, error) {
	var e Estimate
	if in.Shards < 1 {
		return e, fmt.Errorf("estimate: %d shards", in.Shards)
	}
	conc := max(in.Concurrency, 1)
	imb := max(in.Imbalance, 1)
	ratio := in.ShardBytesRatio
	if ratio <= 0 {
		ratio = DefaultShardBytesRatio
	}
	rows := float64(in.Rows)
	shardRows := rows / float64(in.Shards)
	passes := ImportPasses(in.StoredBytes)
	e.PricesDate = PricesDate
	e.Assumptions = []string{
		"stage rates from the 1 000 000-row runs on 2 cores in docs/performance-history.md (scripts/bench-migrate.sh and BenchmarkShardStep, 2026-12-02), per worker on one core, plus 0.2 s per shard step; a Lambda of 3008 MB has about 1.7 vCPUs",
		fmt.Sprintf("import as measured at 10 000 000 rows (2026-12-03), its compactions rewriting the catalog %d time(s); RockLake's compactor merges what it leaves after the cut-over (about one more pass, in RockLake, not counted)", passes),
		fmt.Sprintf("shard files %.0f%% of the catalog's bytes (zstd NDJSON)", ratio*100),
		fmt.Sprintf("Lambda memory from infra's defaults: check %d MB, export %d MB, import %d MB", CheckMemoryMB, ShardMemoryMB, ImportMemoryMB),
		"AWS list prices for us-east-1 as checked " + PricesDate + " (no free tier), not fetched; cold starts, retries and the drift schedule left out",
	}

	wait := min(in.FreezeGraceSeconds, AckSeconds)
	if in.FreezeGraceSeconds > 0 && !in.DryRun {
		e.Assumptions = append(e.Assumptions, fmt.Sprintf("Freeze waits %g s for the servers' supervisors to acknowledge its fence (a writer's stop, a copy of the catalog, a reader's start), at most freeze_grace (%g s); none at all when none follows the pointer", wait, in.FreezeGraceSeconds))
	}

	shardStep := ShardStepSeconds + shardRows*imb/ShardRowsPerSec
	waves := math.Ceil(float64(in.Shards) / float64(conc))
	importSec := rows/ImportRowsPerSec + float64(passes-1)*rows/ImportPassRowsPerSec
	importCalls := max(1, int(math.Ceil(importSec/ImportCallSeconds)))
	verify := rows / VerifyRowsPerSec
	scan := rows / ScanRowsPerSec
	if scan > ScanBudgetSeconds {
		scan = ScanGiveUpSeconds // then cut by the counters' estimate
	}
	if in.SSTs > 0 {
		scan = float64(in.SSTs) / BlockSSTsPerSec
	}
	online := in.Online && !in.DryRun
	grace, replica := 0.0, 0.0
	if !in.DryRun {
		grace = wait
	}
	if in.ReadReplica && !in.DryRun {
		replica = float64(in.StoredBytes) / ReplicaBytesPerSec
		e.Assumptions = append(e.Assumptions, fmt.Sprintf("Freeze (online: Fence) copies the frozen catalog (%d bytes) into a read replica for the servers at %d MiB/s, server side (read_replica)", in.StoredBytes, ReplicaBytesPerSec>>20))
	}
	freeze := FreezeSeconds + scan + grace + replica
	e.Seconds = map[string]float64{
		statemachine.StepCheck: CheckSeconds, statemachine.StepFreeze: freeze, statemachine.StateShards: waves * shardStep,
		statemachine.StepImport: importSec, statemachine.StepFinalize: FinalizeSeconds, statemachine.StepVerify: verify, statemachine.StepFlip: FlipSeconds,
	}
	if online {
		delete(e.Seconds, statemachine.StepFreeze)
		e.Seconds[statemachine.StepSnapshot] = FreezeSeconds + scan
		e.Seconds[statemachine.StepCatchUp] = OnlineRounds * RoundSeconds
		e.Seconds[statemachine.StepVerifyCatchUp] = verify
		e.Seconds[statemachine.StepFence] = grace + FenceSeconds + replica
		e.Seconds[statemachine.StepVerify] = OnlineVerifySeconds
		e.WriteFreezeSeconds = FenceSeconds + replica + RoundSeconds + FinalizeSeconds + OnlineVerifySeconds + FlipSeconds
		e.Assumptions = append(e.Assumptions, fmt.Sprintf("online: the least catch-up (%d rounds of %.1f s: the writers' commits since the round before, a few keys); writers faster than a round make more and longer rounds, bounded by catch_up. The write freeze leaves out RockLake's WAL backlog (its WAL since its memtable last reached L0), which the fence's writer replays and the last round and Verify read: on S3 up to about 18 s at a full backlog of 4096 WAL SSTs (docs/performance.md, the 100M model)", OnlineRounds, RoundSeconds))
	}
	if in.DryRun {
		delete(e.Seconds, statemachine.StepFlip)
		e.Seconds["CleanUpDryRun"] = FlipSeconds
	}
	for _, s := range e.Seconds {
		e.TotalSeconds += s
	}
	if !in.DryRun && !online {
		e.WriteFreezeSeconds = e.TotalSeconds - CheckSeconds - grace
	}

	// Lambda: every step's own time, at its function's memory.
	gb := func(mb int) float64 { return float64(mb) / 1024 }
	e.Lambda.Invocations = 1 + 1 + in.Shards + importCalls + 1 + 1 + 1
	e.Lambda.GBSeconds = gb(CheckMemoryMB)*(CheckSeconds+FlipSeconds) +
		gb(ShardMemoryMB)*(freeze+float64(in.Shards)*ShardStepSeconds+rows/ShardRowsPerSec) +
		gb(ImportMemoryMB)*(importSec+FinalizeSeconds+verify)
	if online {
		// Snapshot and Fence (freeze's grace and replica in it) on the
		// export function; CatchUp and VerifyCatchUp on the import one,
		// and Verify after the fence reads only the change.
		e.Lambda.Invocations += OnlineRounds + 2
		e.Lambda.GBSeconds += gb(ShardMemoryMB)*FenceSeconds +
			gb(ImportMemoryMB)*(e.Seconds[statemachine.StepCatchUp]+e.Seconds[statemachine.StepVerifyCatchUp]+OnlineVerifySeconds-verify)
	}
	e.Lambda.USD = e.Lambda.GBSeconds*LambdaGBSecondUSD + float64(e.Lambda.Invocations)*LambdaRequestUSD

	if len(in.Definition) > 0 {
		n, err := Transitions(in.Definition, Path{Shards: in.Shards, ImportCalls: importCalls, DryRun: in.DryRun, Online: online})
		if err != nil {
			return e, err
		}
		e.StepFunctions.Transitions = n
		e.StepFunctions.USD = float64(n) * TransitionUSD
	}

	// S3: shard files written in both formats and read once (the
	// target-format ones, by import; verify reads only the results), the
	// source read once by the shard steps, the target written by L0 flushes
	// and rewritten once per compaction pass (counted as L0-sized objects:
	// an upper bound).
	shardBytes := float64(in.Bytes) * ratio
	parts := int(math.Ceil(shardBytes/PartBytes)) + in.Shards
	targetObjects := int(math.Ceil(float64(in.StoredBytes) / L0Bytes))
	e.S3.WriteRequests = 2*(parts+2*in.Shards) + in.Shards*perShardSmallPuts + (1+passes)*targetObjects + 20
	e.S3.ReadRequests = in.Objects + parts + in.Shards*(perShardSmallPuts+2) + passes*targetObjects + BlockReadsPerSST*in.SSTs + 20
	e.S3.StagingGB = 2 * shardBytes / (1 << 30)
	e.S3.TargetGB = float64(in.StoredBytes) / (1 << 30)
	e.S3.TargetUSDPerMonth = e.S3.TargetGB * S3StorageGBMonthUSD
	e.S3.USD = float64(e.S3.WriteRequests)*S3WriteRequestUSD + float64(e.S3.ReadRequests)*S3ReadRequestUSD +
		e.S3.StagingGB*S3StorageGBMonthUSD*StagingDays/30
	e.TotalUSD = e.Lambda.USD + e.StepFunctions.USD + e.S3.USD
	return e, nil
}

// ImportPasses is how many times the import's compactions rewrite a catalog
// of storedBytes: once into runs of ImportFanIn L0 SSTs, and once more for
// each ImportFanIn-fold step past that (a size-tiered LSM merges runs of one
// size, ImportFanIn at a time).
func ImportPasses(storedBytes int64) int {
	passes := 1
	for run := float64(ImportFanIn * L0Bytes); float64(storedBytes) >= run*ImportFanIn; run *= ImportFanIn {
		passes++
	}
	return passes
}

// state is what Transitions reads of a state.
type state struct {
	Type          string   `json:"Type"`
	Next          string   `json:"Next"`
	End           bool     `json:"End"`
	Default       string   `json:"Default"`
	Choices       []choice `json:"Choices"`
	ItemProcessor *machine `json:"ItemProcessor"`
	Iterator      *machine `json:"Iterator"`
}

// choice is a Choice rule: a boolean test, or an And of them.
type choice struct {
	Variable      string   `json:"Variable"`
	BooleanEquals *bool    `json:"BooleanEquals"`
	And           []choice `json:"And"`
	Next          string   `json:"Next"`
}

type machine struct {
	StartAt string           `json:"StartAt"`
	States  map[string]state `json:"States"`
}

// maxStates bounds a walk: a definition that loops without end is an error.
const maxStates = 100_000

// Path is the successful run Transitions walks.
type Path struct {
	Shards      int  // Map items
	ImportCalls int  // Import's calls
	DryRun      bool // the cleanup branch instead of Flip
	// Online: Snapshot, then the least catch-up (OnlineRounds): a round,
	// VerifyCatchUp, a round, Fence, the last round.
	Online bool
}

// Transitions counts the state transitions of run through the definition:
// every state entered is one, and each Map item's states too. A Choice
// takes the branch the run takes: a migration is needed, not in place, the
// import is done on its last call, every catch-up round small, verified
// once VerifyCatchUp ran and fenced once Fence did, the dry run and online
// as asked; any other Choice its Default.
func Transitions(def []byte, run Path) (int, error) {
	var m machine
	if err := json.Unmarshal(def, &m); err != nil {
		return 0, fmt.Errorf("estimate: the definition: %w", err)
	}
	entered := map[string]int{}
	vars := func(v string) (bool, bool) {
		switch v {
		case "$.migration.needs_migration", "$.migration.caught_up":
			return true, true
		case "$.migration.in_place":
			return false, true
		case "$.migration.dry_run":
			return run.DryRun, true
		case "$.migration.online":
			return run.Online, true
		case "$.migration.verified":
			return entered[statemachine.StepVerifyCatchUp] > 0, true
		case "$.migration.fenced":
			return entered[statemachine.StepFence] > 0, true
		case "$.import.done":
			return entered[statemachine.StepImport] >= run.ImportCalls, true
		}
		return false, false
	}
	var holds func(c choice) bool
	holds = func(c choice) bool {
		if len(c.And) > 0 {
			for _, a := range c.And {
				if !holds(a) {
					return false
				}
			}
			return true
		}
		v, known := vars(c.Variable)
		return known && c.BooleanEquals != nil && v == *c.BooleanEquals
	}
	var walk func(m machine, items int) (int, error)
	walk = func(m machine, items int) (int, error) {
		n := 0
		for name := m.StartAt; name != ""; {
			if n++; n > maxStates {
				return 0, fmt.Errorf("estimate: the definition does not end (at %s)", name)
			}
			entered[name]++
			s, ok := m.States[name]
			if !ok {
				return 0, fmt.Errorf("estimate: no state %q", name)
			}
			if p := s.ItemProcessor; p != nil || s.Iterator != nil {
				if p == nil {
					p = s.Iterator
				}
				inner, err := walk(*p, 0)
				if err != nil {
					return 0, err
				}
				n += items * inner
			}
			switch {
			case s.Type == "Choice":
				name = s.Default
				for _, c := range s.Choices {
					if holds(c) {
						name = c.Next
						break
					}
				}
			case s.End || s.Type == "Succeed" || s.Type == "Fail":
				name = ""
			default:
				name = s.Next
			}
		}
		return n, nil
	}
	return walk(m, run.Shards)
}
