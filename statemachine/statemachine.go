// Package statemachine holds the workflow definitions: migration.asl.json,
// the migration, rollback.asl.json, the rollback the console starts, and
// drift.asl.json, the scheduled drift check, and fleet.asl.json, a fleet run. Each is the one file that AWS Step Functions runs (deployed by
// infra/) and that the CLI runs locally under pkg/asl. Its Task resources are
// placeholders (${CheckFunctionArn}, ...) filled by DefinitionSubstitutions.
package statemachine

import _ "embed"

// Migration is migration.asl.json, byte for byte.
//
//go:embed migration.asl.json
var Migration []byte

// Drift is drift.asl.json: the scheduled drift check's small wiring.
//
//go:embed drift.asl.json
var Drift []byte

// Rollback is rollback.asl.json: the CLI's rollback as a state machine the
// console can start, with its notices; the rollback run that carries
// commits back is a child execution of the migration state machine.
//
//go:embed rollback.asl.json
var Rollback []byte

// Fleet is fleet.asl.json: a release's fleet run, every pointer of a fleet
// migrated (or rolled back) as child executions of the migration (or
// rollback) state machine, the canary first, then a Distributed Map.
//
//go:embed fleet.asl.json
var Fleet []byte

// Definitions is every definition, by its name (the file's, without
// .asl.json): what the tests and the linters walk.
var Definitions = map[string][]byte{"migration": Migration, "rollback": Rollback, "drift": Drift, "fleet": Fleet}

// Placeholders are the DefinitionSubstitutions the migration definition
// needs: one per Lambda function (check, export, import, inplace), the SNS
// topic, and the Region (of the console links in its notices).
var Placeholders = []string{"CheckFunctionArn", "ExportFunctionArn", "ImportFunctionArn", "InPlaceFunctionArn", "TopicArn", "Region"}

// SNSPublish is the Step Functions service integration the definition uses
// to notify.
const SNSPublish = "arn:aws:states:::sns:publish"

// StartExecutionSync is the integration the rollback definition runs the
// rollback run with: the migration state machine (its placeholder
// ${MigrationStateMachineArn}) as a child execution, waited for.
const StartExecutionSync = "arn:aws:states:::states:startExecution.sync:2"
