package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsevents"
	"github.com/aws/aws-cdk-go/awscdk/v2/awseventstargets"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsscheduler"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsschedulertargets"
	"github.com/aws/jsii-runtime-go"

	"github.com/rocklake/rocklake-migrate/statemachine"
)

// A fleet (issue 39): every pointer under the configured prefixes or in
// the configured lists, migrated by one fleet run on a release. The fleet
// state machine (statemachine/fleet.asl.json, as the CLI runs it locally)
// lists the pointers on the check function, runs the canary, then a
// Distributed Map whose items are child executions of the migration (or
// rollback) state machine, and publishes one summary.

// FleetRecordsSuffix is what pkg/layout.FleetRuns puts after a source
// (without its trailing /) for the prefix of its fleet runs' records; not
// imported, as for the pointer's suffixes (grantObjects).
const FleetRecordsSuffix = ".fleet/"

// FleetDefinition is statemachine/fleet.asl.json as deployed, after a
// check that a fleet run outlasts each of its pointers' migrations: the
// fleet's top-level timeout stops its child executions, and a stopped
// migration leaves its lock for `rocklake-migrate unlock`.
func FleetDefinition(cfg Config) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(statemachine.Fleet))
	dec.UseNumber()
	var def struct{ TimeoutSeconds json.Number }
	if err := dec.Decode(&def); err != nil {
		return nil, fmt.Errorf("fleet definition: %w", err)
	}
	limit, err := def.TimeoutSeconds.Int64()
	if err != nil {
		return nil, fmt.Errorf("fleet definition: TimeoutSeconds: %w", err)
	}
	if int64(executionTimeoutSeconds(cfg)) >= limit {
		return nil, fmt.Errorf("context executionTimeoutHours %d: a fleet run lasts at most %d h (fleet.asl.json), and one of its migrations may take executionTimeoutHours: want less",
			cfg.ExecutionTimeoutHours, limit/3600)
	}
	return statemachine.Fleet, nil
}

// grantFleet grants a function's role (through add) what its steps do
// with the fleet's objects: under each prefix of the fleet's scope, where
// pointers, their locks, records and claims, and catalogs lie side by side
// and are told apart only by content (fleet.Discover), the union of what
// sp grants on the stack's own pointer and catalogs; for the check
// function (FleetList, FleetReport), the fleet runs' records beside each
// source and the lists.
func (s *MigrateStack) grantFleet(add func(sid string, actions []string, resources []*string, cond map[string]interface{}), sp perms, f Fleet) {
	if !sp.catalogRead && !sp.lockRead && !sp.pointerWrite {
		return
	}
	partition := *awscdk.Stack_Of(s.Stack).Partition()
	objects := func(bucket, key string) *string {
		return jsii.String("arn:" + partition + ":s3:::" + bucket + "/" + key)
	}
	bucketArn := func(bucket string) *string { return jsii.String("arn:" + partition + ":s3:::" + bucket) }

	actions := []string{"s3:GetObject"}
	if sp.catalogWrite || sp.pointerWrite {
		actions = append(actions, "s3:PutObject", "s3:AbortMultipartUpload")
	}
	if sp.catalogDelete || sp.pointerWrite {
		actions = append(actions, "s3:DeleteObject")
	}
	if sp.pointerWrite { // rollback reads the pointer's earlier versions
		actions = append(actions, "s3:GetObjectVersion")
	}
	scope := map[string][]string{}   // bucket → prefixes (keys)
	records := map[string][]string{} // bucket → fleet-run record prefixes
	lists := map[string][]string{}   // bucket → list objects
	for _, p := range f.Scope {
		b, k, _ := splitS3(p)
		scope[b] = append(scope[b], k)
	}
	if sp.fleetRuns {
		for _, src := range f.Sources {
			b, k, _ := splitS3(src)
			records[b] = append(records[b], strings.TrimSuffix(k, "/")+FleetRecordsSuffix)
			if !strings.HasSuffix(src, "/") {
				lists[b] = append(lists[b], k)
			}
		}
	}
	var buckets []string
	for _, m := range []map[string][]string{scope, records} {
		for b := range m {
			if !slices.Contains(buckets, b) {
				buckets = append(buckets, b)
			}
		}
	}
	slices.Sort(buckets)
	for i, b := range buckets {
		sid := fmt.Sprintf("Fleet%d", i)
		var res, listed []string
		for _, k := range scope[b] {
			res, listed = append(res, k+"*"), append(listed, k+"*")
		}
		if len(res) > 0 {
			add(sid+"Objects", actions, arns(objects, b, res), nil)
		}
		if len(records[b]) > 0 {
			var rec []string
			for _, k := range records[b] {
				rec, listed = append(rec, k+"*"), append(listed, k+"*")
			}
			add(sid+"Records", []string{"s3:GetObject", "s3:PutObject"}, arns(objects, b, rec), nil)
		}
		if len(lists[b]) > 0 {
			add(sid+"Lists", []string{"s3:GetObject"}, arns(objects, b, lists[b]), nil)
		}
		add(sid+"List", []string{"s3:ListBucket"}, []*string{bucketArn(b)},
			map[string]interface{}{"StringLike": map[string]interface{}{"s3:prefix": listed}})
		if sp.pointerWrite && len(scope[b]) > 0 {
			var prefixes []string
			for _, k := range scope[b] {
				prefixes = append(prefixes, k+"*")
			}
			add(sid+"PointerVersions", []string{"s3:ListBucketVersions"}, []*string{bucketArn(b)},
				map[string]interface{}{"StringLike": map[string]interface{}{"s3:prefix": prefixes}})
			// pointer.Flip and Rollback refuse an unversioned bucket.
			add(sid+"Versioning", []string{"s3:GetBucketVersioning"}, []*string{bucketArn(b)}, nil)
		}
	}
}

func arns(objects func(bucket, key string) *string, bucket string, keys []string) []*string {
	out := make([]*string, 0, len(keys))
	for _, k := range keys {
		out = append(out, objects(bucket, k))
	}
	return out
}

// fleetStateMachine adds the fleet state machine: its role invokes only
// the check function (FleetList, FleetReport), publishes the summary,
// runs its own Distributed Map's children, and runs the migration and
// rollback state machines as child executions, waited for.
func (s *MigrateStack) fleetStateMachine(stack awscdk.Stack, cfg Config, logs map[string]awslogs.ILogGroup) error {
	def, err := FleetDefinition(cfg)
	if err != nil {
		return err
	}
	subs := map[string]*string{
		"CheckFunctionArn":         s.Functions["check"].FunctionArn(),
		"MigrationStateMachineArn": s.Migration.StateMachineArn(),
		"RollbackStateMachineArn":  s.Rollback.StateMachineArn(),
		"TopicArn":                 s.Topic.TopicArn(),
	}
	s.Fleet, logs["Fleet"], err = newStateMachine(stack, "Fleet", cfg.Name+"-fleet", cfg, def, subs,
		[]awslambda.Function{s.Functions["check"]}, s.Topic, true)
	if err != nil {
		return err
	}
	allowChildRuns(stack, s.Fleet, childMachine{s.Migration, cfg.Name + "-migration"}, childMachine{s.Rollback, cfg.Name + "-rollback"})
	return nil
}

// fleetTriggers adds what starts the fleet's runs: a release event naming
// the fleet (detail.fleet) or carrying its own sources under the fleet's
// prefixes (detail.sources) starts a fleet run; the fleet's drift check
// runs on its schedule.
func (s *MigrateStack) fleetTriggers(stack awscdk.Stack, cfg Config) {
	f := cfg.Fleet
	input := func(sources any) awsevents.RuleTargetInput {
		return awsevents.RuleTargetInput_FromObject(map[string]interface{}{
			"sources":        sources,
			"action":         "migrate",
			"target_version": awsevents.EventField_FromPath(jsii.String("$.detail.target_format_version")),
			"canary":         f.Canary,
			"concurrency":    f.Concurrency,
			"max_failures":   f.MaxFailures,
			// The fleet run's record names what started it; each pointer's
			// run records "fleet:<fleet run>".
			"trigger": "release:" + *awsevents.EventField_EventId(),
			// Each pointer's migration's input, as the pointer's release
			// rule gives it.
			"child": map[string]interface{}{"shards": cfg.DefaultShards, "in_place_auto": cfg.InPlaceAuto, "online": cfg.Online},
		})
	}
	target := func(in awsevents.RuleTargetInput) awsevents.IRuleTarget {
		return awseventstargets.NewSfnStateMachine(s.Fleet, &awseventstargets.SfnStateMachineProps{
			Input:         in,
			RetryAttempts: jsii.Number(3),
			MaxEventAge:   awscdk.Duration_Hours(jsii.Number(2)),
		})
	}
	version := awsevents.Match_GreaterThan(jsii.Number(0))
	// The fleet by name: the configured sources. An event with sources of
	// its own is the other rule's, so that one event starts one fleet run.
	awsevents.NewRule(stack, jsii.String("FleetReleaseRule"), &awsevents.RuleProps{
		RuleName:    jsii.String(cfg.Name + "-release-fleet"),
		Description: jsii.String("A RockLake release deployed for the fleet " + f.Name + ": migrate every pointer of the fleet to its format version"),
		EventPattern: &awsevents.EventPattern{
			Source:     jsii.Strings(ReleaseEventSource),
			DetailType: jsii.Strings(ReleaseEventDetailType),
			Detail: &map[string]interface{}{
				"fleet":                 []string{f.Name},
				"sources":               awsevents.Match_DoesNotExist(),
				"target_format_version": version,
			},
		},
		Targets: &[]awsevents.IRuleTarget{target(input(f.Sources))},
	})
	// The event's own sources, when one lies under the fleet's prefixes or
	// is one of its lists; the roles reach nothing outside them, so a
	// source beyond fails FleetList (AccessDenied), named in the notice.
	var within []interface{}
	for _, p := range f.Scope {
		within = append(within, awsevents.Match_Prefix(jsii.String(p)))
	}
	for _, src := range f.Sources {
		if !strings.HasSuffix(src, "/") {
			within = append(within, awsevents.Match_ExactString(jsii.String(src)))
		}
	}
	awsevents.NewRule(stack, jsii.String("FleetSourcesReleaseRule"), &awsevents.RuleProps{
		RuleName:    jsii.String(cfg.Name + "-release-sources"),
		Description: jsii.String("A RockLake release deployed for the pointers under detail.sources (within the fleet's prefixes): migrate each to its format version"),
		EventPattern: &awsevents.EventPattern{
			Source:     jsii.Strings(ReleaseEventSource),
			DetailType: jsii.Strings(ReleaseEventDetailType),
			Detail: &map[string]interface{}{
				"sources":               awsevents.Match_AnyOf(within...),
				"fleet":                 awsevents.Match_DoesNotExist(),
				"target_format_version": version,
			},
		},
		Targets: &[]awsevents.IRuleTarget{target(input(awsevents.EventField_FromPath(jsii.String("$.detail.sources"))))},
	})

	// The fleet's drift check: drift.asl.json with {"sources"} runs the
	// FleetDrift step (one alert for the fleet).
	awsscheduler.NewSchedule(stack, jsii.String("FleetDriftSchedule"), &awsscheduler.ScheduleProps{
		ScheduleName: jsii.String(cfg.Name + "-fleet-drift"),
		Description:  jsii.String("rocklake-migrate drift check of every pointer of the fleet " + f.Name),
		Schedule:     awsscheduler.ScheduleExpression_Expression(jsii.String(f.DriftSchedule), nil),
		Target: awsschedulertargets.NewStepFunctionsStartExecution(s.Drift, &awsschedulertargets.ScheduleTargetBaseProps{
			// No "expect": read from the parameter when it runs.
			Input: awsscheduler.ScheduleTargetInput_FromObject(map[string]interface{}{
				"sources": f.Sources,
				"topic":   s.Topic.TopicArn(),
			}),
			RetryAttempts: jsii.Number(2),
		}),
	})
}
