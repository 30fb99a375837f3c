// Package statemachine holds the workflow definitions: migration.asl.json,
// the migration, and drift.asl.json, the scheduled drift check. Each is the one file that AWS Step Functions runs (deployed by
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

// Placeholders are the DefinitionSubstitutions the definition needs: one per
// Lambda function (check, export, transform, import) and the SNS topic.
var Placeholders = []string{"CheckFunctionArn", "ExportFunctionArn", "TransformFunctionArn", "ImportFunctionArn", "TopicArn"}

// SNSPublish is the Step Functions service integration the definition uses
// to notify.
const SNSPublish = "arn:aws:states:::sns:publish"
