package statemachine

// The steps, by the name the definitions' Task states give them (their
// Parameters.step, which is also the state's name): the only place in the
// Go code that spells them. pkg/workflow's step table maps each to its
// function and Lambda; the records, the local run's display, plan's
// estimates and the dashboard (infra/) name states with these. A test
// (pkg/workflow's TestStepTableIsTheDefinitions) holds them against the
// definitions.
const (
	StepCheck                = "Check"
	StepGate                 = "Gate"
	StepFlip                 = "Flip"
	StepAbort                = "Abort"
	StepRollback             = "Rollback"
	StepDrift                = "Drift"
	StepFreeze               = "Freeze"
	StepSnapshot             = "Snapshot"
	StepFence                = "Fence"
	StepExportTransformShard = "ExportTransformShard"
	StepExportShard          = "ExportShard"
	StepTransformShard       = "TransformShard"
	StepImport               = "Import"
	StepCatchUp              = "CatchUp"
	StepVerifyCatchUp        = "VerifyCatchUp"
	StepFinalize             = "Finalize"
	StepVerify               = "Verify"
	StepInPlace              = "InPlace"
	StepFleetList            = "FleetList"
	StepFleetReport          = "FleetReport"
	StepFleetGo              = "FleetGo"
	StepFleetFailed          = "FleetFailed"
	StepFleetDrift           = "FleetDrift"
)

// StateShards is the migration definition's Map state, which runs a
// shard step per shard; plan's estimates and the records time it whole.
const StateShards = "Shards"
