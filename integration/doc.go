// Package integration is the end-to-end suite of rocklake-migrate on the
// local stack: versitygw for S3, moto for SNS, each function's bootstrap
// (dist/<fn>/bootstrap, `make build`) under the AWS Lambda Runtime Interface
// Emulator behind a Lambda Invoke API front, and statemachine/migration.asl.json
// run by pkg/asl and by npm aws-local-stepfunctions. Everything listens on
// 127.0.0.1 and is stopped when the suite ends. See README.md.
package integration
