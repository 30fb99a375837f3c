package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsevents"
	"github.com/aws/aws-cdk-go/awscdk/v2/awseventstargets"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awss3"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsscheduler"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsschedulertargets"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssns"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsssm"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsstepfunctions"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/rocklake/rocklake-migrate/statemachine"
)

// Functions are the three Lambdas (pkg/workflow.Functions) in a fixed
// order, with the definition placeholder each one fills.
var Functions = []struct{ Name, Placeholder string }{
	{"check", "CheckFunctionArn"},
	{"export", "ExportFunctionArn"},
	{"import", "ImportFunctionArn"},
	{"inplace", "InPlaceFunctionArn"},
}

// ExpectedVersionParameterEnv is pkg/runstate.ExpectedVersionParameterEnv
// (not imported: the CDK app does not build the Lambdas' cgo code).
const ExpectedVersionParameterEnv = "ROCKLAKE_EXPECTED_VERSION_PARAMETER"

// ExecutionTimeoutEnv is pkg/runstate.ExecutionTimeoutEnv: every function
// gets the migration state machine's TimeoutSeconds, from which Check
// derives the lock's lease, so the lease covers the execution whatever
// executionTimeoutHours says.
const ExecutionTimeoutEnv = "ROCKLAKE_EXECUTION_TIMEOUT_SECONDS"

// InPlaceMemoryEnv is pkg/runstate.InPlaceMemoryEnv: on the check function,
// the inplace function's memory (MB), which Check holds in_place_max_bytes
// to (InPlaceLimitTooLarge); the inplace function reads its own.
const InPlaceMemoryEnv = "ROCKLAKE_INPLACE_MEMORY_MB"

// inPlaceMemoryMB is the inplace function's memory. Strategy A holds its
// batch in memory, the undo's second one included: about 64 MiB + 38x the
// catalog's transformed bytes (pkg/inplace.PeakBytes), 1.3 GiB at the
// default in_place_max_bytes of 32 MiB; with a tenth spare, 2048 MB holds
// limits up to 46 MiB, and Check refuses larger ones.
const inPlaceMemoryMB = 2048

// ReleaseEventSource and ReleaseEventDetailType are the documented custom
// event that starts a migration (infra/README.md).
const (
	ReleaseEventSource     = "rocklake.release"
	ReleaseEventDetailType = "RockLake Release Deployed"
)

// MigrateStack is the deployed system.
type MigrateStack struct {
	awscdk.Stack
	// Catalog and Staging are created by the stack, or the existing
	// buckets of those names (existingCatalogBucket, existingStagingBucket).
	Catalog, Staging           awss3.IBucket
	Functions                  map[string]awslambda.Function
	Topic                      awssns.Topic
	Migration, Drift, Rollback awsstepfunctions.StateMachine
	// Fleet is the fleet state machine; nil without a fleet (fleetSources).
	Fleet awsstepfunctions.StateMachine
	// ExpectedVersion is the SSM parameter the release pipeline sets.
	ExpectedVersion awsssm.StringParameter
	Dashboard       awscloudwatch.Dashboard
	alarmList       []awscloudwatch.Alarm
}

type perms struct {
	pointerWrite  bool // Flip, Rollback
	catalogRead   bool
	catalogWrite  bool // SlateDB writer: Freeze (source), Import (target), Abort (checkpoint)
	catalogDelete bool // Abort (target), the import writer's own deletes
	stagingWrite  bool
	stagingDelete bool // Abort
	publish       bool // Drift
	readExpected  bool // Check, Drift: the expected-version parameter
	lockRead      bool // the steps from Freeze on confirm the lock is theirs
	fleetRuns     bool // FleetList, FleetReport: the fleet runs' records and lists
	memoryMB      int
	ephemeralMB   int
	timeout       awscdk.Duration
	concurrency   int
	description   string
}

// NewMigrateStack builds the stack from cfg.
func NewMigrateStack(scope constructs.Construct, id string, props *awscdk.StackProps, cfg Config) (*MigrateStack, error) {
	stack := awscdk.NewStack(scope, &id, props)
	s := &MigrateStack{Stack: stack, Functions: map[string]awslambda.Function{}}
	awscdk.Tags_Of(stack).Add(jsii.String("project"), jsii.String("rocklake-migrate"), nil)

	// Buckets: private, TLS only, encrypted, owner-enforced; or existing
	// ones, whose settings are then their owners' (infra/README.md).
	if cfg.ExistingCatalogBucket {
		s.Catalog = awss3.Bucket_FromBucketName(stack, jsii.String("CatalogBucket"), jsii.String(cfg.CatalogBucketName))
	} else {
		s.Catalog = newCatalogBucket(stack, cfg)
	}
	if cfg.ExistingStagingBucket {
		s.Staging = awss3.Bucket_FromBucketName(stack, jsii.String("StagingBucket"), jsii.String(cfg.StagingBucketName))
	} else {
		s.Staging = newStagingBucket(stack, cfg)
	}

	s.Topic = awssns.NewTopic(stack, jsii.String("AlertTopic"), &awssns.TopicProps{
		TopicName:   jsii.String(cfg.Name + "-alerts"),
		DisplayName: jsii.String("rocklake-migrate alerts"),
		EnforceSSL:  jsii.Bool(true),
	})

	// The release pipeline sets it (aws ssm put-parameter --overwrite) when
	// it deploys a RockLake release; the stack only creates it, with
	// expectVersion, and CloudFormation leaves a value set since alone.
	s.ExpectedVersion = awsssm.NewStringParameter(stack, jsii.String("ExpectedVersion"), &awsssm.StringParameterProps{
		ParameterName: jsii.String(cfg.ExpectedVersionParameter),
		StringValue:   jsii.String(strconv.Itoa(cfg.ExpectVersion)),
		Description:   jsii.String("The catalog format version the deployed RockLake release expects; set by the release pipeline, read by Check and the drift check"),
	})

	pointerURL := "s3://" + *s.Catalog.BucketName() + "/" + cfg.PointerKey
	stagingURL := "s3://" + *s.Staging.BucketName() + "/" + strings.TrimSuffix(cfg.StagingPrefix, "/")
	if err := s.functions(stack, cfg, stagingURL); err != nil {
		return nil, err
	}
	logs, err := s.stateMachines(stack, cfg)
	if err != nil {
		return nil, err
	}
	s.triggers(stack, cfg, pointerURL)
	s.alarms(cfg, logs)
	s.Dashboard = s.dashboard(cfg)

	addNagSuppressions(stack)

	s.outputs(stack, pointerURL, stagingURL)
	return s, nil
}

// functions adds the four Lambdas, each with its log group and a role that
// reaches only the objects its steps need (specs).
func (s *MigrateStack) functions(stack awscdk.Stack, cfg Config, stagingURL string) error {
	// Every Lambda times out at least lambdaMargin before the shortest state
	// timeout of the states it serves (infra test TestFunctions): a step
	// must never outlive its state, or Abort could run while a Flip still
	// writes the pointer. Steps work within the Lambda's own deadline.
	shardTimeout := awscdk.Duration_Seconds(jsii.Number(900))
	reserved := ReservedConcurrency(cfg)
	specs := map[string]perms{
		"check": {pointerWrite: true, catalogRead: true, catalogWrite: true, catalogDelete: true, stagingWrite: true, stagingDelete: true, publish: true, readExpected: true, fleetRuns: true,
			memoryMB: 1024, ephemeralMB: 512, timeout: awscdk.Duration_Seconds(jsii.Number(110)), concurrency: reserved["check"],
			description: "rocklake-migrate steps Check, Flip, Abort, Rollback, Drift, FleetList, FleetReport, FleetDrift"},
		// Freeze opens the source as a passive SlateDB writer (fencing and a
		// checkpoint; no compaction or garbage collection), so export
		// writes under catalogs/ but deletes nothing there.
		"export": {catalogRead: true, catalogWrite: true, stagingWrite: true, lockRead: true,
			memoryMB: cfg.ShardMemoryMB, ephemeralMB: 2048, timeout: shardTimeout, concurrency: reserved["export"],
			description: "rocklake-migrate steps Freeze, ExportTransformShard (the Map), ExportShard, TransformShard"},
		"import": {catalogRead: true, catalogWrite: true, catalogDelete: true, stagingWrite: true, lockRead: true,
			memoryMB: max(cfg.ShardMemoryMB, 4096), ephemeralMB: 4096, timeout: shardTimeout, concurrency: reserved["import"],
			description: "rocklake-migrate steps Import, Finalize, Verify (the one writer of the target)"},
		// Strategy A writes the catalog where it lies (its way back copied
		// beside it, deleted again if the run fails) and moves the pointer,
		// so it holds the catalogs' and the pointer's rights that no other
		// step combines; no staging, no topic. Its batch is held in memory
		// (inPlaceMemoryMB).
		"inplace": {pointerWrite: true, catalogRead: true, catalogWrite: true, catalogDelete: true,
			memoryMB: inPlaceMemoryMB, ephemeralMB: 512, timeout: shardTimeout, concurrency: reserved["inplace"],
			description: "rocklake-migrate step InPlace (Strategy A: catalog and pointer)"},
	}

	for _, f := range Functions {
		sp := specs[f.Name]
		zip := filepath.Join(cfg.DistDir, f.Name+".zip")
		if _, err := os.Stat(zip); err != nil {
			return fmt.Errorf("%s: %w (run `make build` first)", zip, err)
		}
		fnName := cfg.Name + "-" + f.Name
		logs := awslogs.NewLogGroup(stack, jsii.String(title(f.Name)+"Logs"), &awslogs.LogGroupProps{
			LogGroupName:  jsii.String("/aws/lambda/" + fnName),
			Retention:     retention(cfg.LogRetentionDays),
			RemovalPolicy: awscdk.RemovalPolicy_RETAIN,
		})
		role := awsiam.NewRole(stack, jsii.String(title(f.Name)+"Role"), &awsiam.RoleProps{
			AssumedBy:   awsiam.NewServicePrincipal(jsii.String("lambda.amazonaws.com"), nil),
			Description: jsii.String("rocklake-migrate " + f.Name + " Lambda: only the buckets and prefixes it needs"),
		})
		add := func(sid string, actions []string, resources []*string, cond map[string]interface{}) {
			st := &awsiam.PolicyStatementProps{Sid: jsii.String(sid), Actions: jsii.Strings(actions...), Resources: &resources}
			if cond != nil {
				st.Conditions = &cond
			}
			role.AddToPolicy(awsiam.NewPolicyStatement(st))
		}
		add("Logs", []string{"logs:CreateLogStream", "logs:PutLogEvents"}, []*string{logs.LogGroupArn()}, nil)
		s.grantObjects(add, sp, cfg)
		if sp.publish {
			add("Alerts", []string{"sns:Publish"}, []*string{s.Topic.TopicArn()}, nil)
		}
		env := map[string]*string{
			"ROCKLAKE_STAGING":  jsii.String(stagingURL),
			ExecutionTimeoutEnv: jsii.String(strconv.Itoa(executionTimeoutSeconds(cfg))),
		}
		if sp.readExpected {
			add("ExpectedVersion", []string{"ssm:GetParameter"}, []*string{s.ExpectedVersion.ParameterArn()}, nil)
			env[ExpectedVersionParameterEnv] = jsii.String(cfg.ExpectedVersionParameter)
		}
		if f.Name == "check" { // Check and Plan hold the in-place limit to it
			env[InPlaceMemoryEnv] = jsii.String(strconv.Itoa(inPlaceMemoryMB))
		}
		fn := awslambda.NewFunction(stack, jsii.String(title(f.Name)+"Function"), &awslambda.FunctionProps{
			FunctionName:                 jsii.String(fnName),
			Description:                  jsii.String(sp.description),
			Runtime:                      awslambda.Runtime_PROVIDED_AL2023(),
			Architecture:                 awslambda.Architecture_X86_64(),
			Handler:                      jsii.String("bootstrap"),
			Code:                         awslambda.Code_FromAsset(jsii.String(zip), nil),
			MemorySize:                   jsii.Number(float64(sp.memoryMB)),
			EphemeralStorageSize:         awscdk.Size_Mebibytes(jsii.Number(float64(sp.ephemeralMB))),
			Timeout:                      sp.timeout,
			ReservedConcurrentExecutions: jsii.Number(float64(sp.concurrency)),
			Role:                         role,
			LogGroup:                     logs,
			LoggingFormat:                awslambda.LoggingFormat_JSON,
			Tracing:                      awslambda.Tracing_ACTIVE,
			RetryAttempts:                jsii.Number(0), // Step Functions retries, never async Lambda
			Environment:                  &env,
		})
		s.Functions[f.Name] = fn
	}

	return nil
}

// grantObjects grants a function's role (through add) what its steps do
// with the objects: the pointer and what lies beside it, the catalogs,
// staging, the lock and the supervisors' presence records (perms).
func (s *MigrateStack) grantObjects(add func(sid string, actions []string, resources []*string, cond map[string]interface{}), sp perms, cfg Config) {
	pointerArn := s.Catalog.ArnForObjects(jsii.String(cfg.PointerKey))
	// The objects beside the pointer, by key as pkg/layout names them (Lock,
	// HistoryDir, ClaimsDir; this module does not import the tool and its
	// AWS SDK for three suffixes, and TestLambdaLeastPrivilege pins them).
	// The one-migration-at-a-time lock.
	lockArn := s.Catalog.ArnForObjects(jsii.String(cfg.PointerKey + ".lock"))
	// The run records (pkg/history): Check, Flip, Abort
	// and Rollback write them.
	historyArn := s.Catalog.ArnForObjects(jsii.String(cfg.PointerKey + ".history/*"))
	// The claims (pkg/claim): Check claims a target,
	// InPlace its way back, Flip records the flip, Abort and the in-place
	// undo withdraw theirs.
	claimsArn := s.Catalog.ArnForObjects(jsii.String(cfg.PointerKey + ".claims/*"))
	// The supervisors' presence records (pkg/presence): the steps that
	// fence a source or remove a read replica wait on them.
	serversArn := s.Catalog.ArnForObjects(jsii.String(cfg.PointerKey + ".servers/*"))
	catalogObjects := s.Catalog.ArnForObjects(jsii.String(cfg.CatalogPrefix + "*"))
	stagingObjects := s.Staging.ArnForObjects(jsii.String(cfg.StagingPrefix + "*"))

	listPrefixes := []string{}
	if sp.pointerWrite {
		add("PointerReadWrite", []string{"s3:GetObject", "s3:GetObjectVersion", "s3:PutObject"}, []*string{pointerArn, lockArn, historyArn, claimsArn}, nil)
		add("ClaimsWithdraw", []string{"s3:DeleteObject"}, []*string{claimsArn}, nil)
		add("PointerVersions", []string{"s3:ListBucketVersions"}, []*string{s.Catalog.BucketArn()},
			map[string]interface{}{"StringLike": map[string]interface{}{"s3:prefix": []string{cfg.PointerKey + "*"}}})
		// pointer.Flip and Rollback refuse an unversioned bucket.
		add("PointerBucketVersioning", []string{"s3:GetBucketVersioning"}, []*string{s.Catalog.BucketArn()}, nil)
		listPrefixes = append(listPrefixes, cfg.PointerKey+"*")
	}
	if sp.catalogRead {
		actions := []string{"s3:GetObject"}
		if sp.catalogWrite {
			actions = append(actions, "s3:PutObject", "s3:AbortMultipartUpload")
		}
		if sp.catalogDelete {
			actions = append(actions, "s3:DeleteObject")
		}
		add("Catalogs", actions, []*string{catalogObjects}, nil)
		listPrefixes = append(listPrefixes, cfg.CatalogPrefix+"*")
	}
	if sp.stagingWrite {
		actions := []string{"s3:GetObject", "s3:PutObject", "s3:AbortMultipartUpload"}
		if sp.stagingDelete {
			actions = append(actions, "s3:DeleteObject")
		}
		add("Staging", actions, []*string{stagingObjects}, nil)
		add("StagingList", []string{"s3:ListBucket"}, []*string{s.Staging.BucketArn()},
			map[string]interface{}{"StringLike": map[string]interface{}{"s3:prefix": []string{cfg.StagingPrefix + "*"}}})
	}
	if sp.lockRead {
		add("LockRead", []string{"s3:GetObject"}, []*string{lockArn}, nil)
	}
	if sp.lockRead || sp.pointerWrite {
		add("ServersRead", []string{"s3:GetObject"}, []*string{serversArn}, nil)
		if !sp.pointerWrite {
			listPrefixes = append(listPrefixes, cfg.PointerKey+".servers/*")
		}
	}
	if len(listPrefixes) > 0 {
		add("CatalogList", []string{"s3:ListBucket"}, []*string{s.Catalog.BucketArn()},
			map[string]interface{}{"StringLike": map[string]interface{}{"s3:prefix": listPrefixes}})
	}
	if cfg.Fleet.Configured() {
		s.grantFleet(add, sp, cfg.Fleet)
	}
}

// stateMachines adds the migration, drift and rollback state machines,
// their definitions' placeholders filled, and returns their log groups.
func (s *MigrateStack) stateMachines(stack awscdk.Stack, cfg Config) (map[string]awslogs.ILogGroup, error) {
	subs := map[string]*string{"TopicArn": s.Topic.TopicArn(), "Region": stack.Region()}
	for _, f := range Functions {
		subs[f.Placeholder] = s.Functions[f.Name].FunctionArn()
	}
	migration, err := MigrationDefinition(cfg)
	if err != nil {
		return nil, err
	}
	logs := map[string]awslogs.ILogGroup{}
	s.Migration, logs["Migration"], err = newStateMachine(stack, "Migration", cfg.Name+"-migration", cfg, migration, subs,
		[]awslambda.Function{s.Functions["check"], s.Functions["export"], s.Functions["import"], s.Functions["inplace"]}, s.Topic, true)
	if err != nil {
		return nil, err
	}
	s.Drift, logs["Drift"], err = newStateMachine(stack, "Drift", cfg.Name+"-drift", cfg, statemachine.Drift,
		map[string]*string{"CheckFunctionArn": s.Functions["check"].FunctionArn()},
		[]awslambda.Function{s.Functions["check"]}, nil, false)
	if err != nil {
		return nil, err
	}
	s.Rollback, logs["Rollback"], err = newStateMachine(stack, "Rollback", cfg.Name+"-rollback", cfg, statemachine.Rollback,
		map[string]*string{"CheckFunctionArn": s.Functions["check"].FunctionArn(), "TopicArn": s.Topic.TopicArn(), "Region": stack.Region(),
			"MigrationStateMachineArn": s.Migration.StateMachineArn()},
		[]awslambda.Function{s.Functions["check"]}, s.Topic, false)
	if err != nil {
		return nil, err
	}
	allowChildRuns(stack, s.Rollback, childMachine{s.Migration, cfg.Name + "-migration"})
	if cfg.Fleet.Configured() {
		if err := s.fleetStateMachine(stack, cfg, logs); err != nil {
			return nil, err
		}
	}
	return logs, nil
}

// triggers adds what starts the runs: a release deployed starts a
// migration of the pointer; the drift check runs on a schedule.
func (s *MigrateStack) triggers(stack awscdk.Stack, cfg Config, pointerURL string) {
	// A release deployed → a migration of this stack's pointer.
	rule := awsevents.NewRule(stack, jsii.String("ReleaseRule"), &awsevents.RuleProps{
		RuleName:    jsii.String(cfg.Name + "-release"),
		Description: jsii.String("A RockLake release deployed: migrate the catalog behind the pointer to its format version"),
		EventPattern: &awsevents.EventPattern{
			Source:     jsii.Strings(ReleaseEventSource),
			DetailType: jsii.Strings(ReleaseEventDetailType),
			Detail: &map[string]interface{}{
				"pointer":               []string{pointerURL},
				"target_format_version": awsevents.Match_GreaterThan(jsii.Number(0)),
			},
		},
	})
	rule.AddTarget(awseventstargets.NewSfnStateMachine(s.Migration, &awseventstargets.SfnStateMachineProps{
		Input: awsevents.RuleTargetInput_FromObject(map[string]interface{}{
			"pointer":        awsevents.EventField_FromPath(jsii.String("$.detail.pointer")),
			"target_version": awsevents.EventField_FromPath(jsii.String("$.detail.target_format_version")),
			"shards":         cfg.DefaultShards,
			"in_place_auto":  cfg.InPlaceAuto,
			"online":         cfg.Online,
			// The run's record names what started it (pkg/history).
			"trigger": "release:" + *awsevents.EventField_EventId(),
		}),
		RetryAttempts: jsii.Number(3),
		MaxEventAge:   awscdk.Duration_Hours(jsii.Number(2)),
	}))

	// The drift check, on a schedule.
	awsscheduler.NewSchedule(stack, jsii.String("DriftSchedule"), &awsscheduler.ScheduleProps{
		ScheduleName: jsii.String(cfg.Name + "-drift"),
		Description:  jsii.String("rocklake-migrate drift check of the pointer and its catalog"),
		Schedule:     awsscheduler.ScheduleExpression_Expression(jsii.String(cfg.DriftSchedule), nil),
		Target: awsschedulertargets.NewStepFunctionsStartExecution(s.Drift, &awsschedulertargets.ScheduleTargetBaseProps{
			// No "expect": the drift check reads the expected-version
			// parameter when it runs, so a release needs no redeploy.
			Input: awsscheduler.ScheduleTargetInput_FromObject(map[string]interface{}{
				"pointer": pointerURL,
				"topic":   s.Topic.TopicArn(),
			}),
			RetryAttempts: jsii.Number(2),
		}),
	})
	if cfg.Fleet.Configured() {
		s.fleetTriggers(stack, cfg)
	}
}

// outputs names what an operator needs from the stack.
func (s *MigrateStack) outputs(stack awscdk.Stack, pointerURL, stagingURL string) {
	out := func(id, desc string, v *string) {
		awscdk.NewCfnOutput(stack, jsii.String(id), &awscdk.CfnOutputProps{Value: v, Description: jsii.String(desc)})
	}
	out("StateMachineArn", "The migration state machine", s.Migration.StateMachineArn())
	out("RollbackStateMachineArn", "The rollback state machine (start it from the console)", s.Rollback.StateMachineArn())
	out("DriftStateMachineArn", "The drift check state machine", s.Drift.StateMachineArn())
	out("ExpectedVersionParameter", "The SSM parameter the release pipeline sets", s.ExpectedVersion.ParameterName())
	out("DashboardUrl", "The CloudWatch dashboard", jsii.String(fmt.Sprintf("https://%s.console.aws.amazon.com/cloudwatch/home?region=%s#dashboards:name=%s",
		*stack.Region(), *stack.Region(), *s.Dashboard.DashboardName())))
	out("PointerLocation", "The catalog pointer object", jsii.String(pointerURL))
	out("StagingLocation", "ROCKLAKE_STAGING", jsii.String(stagingURL))
	out("TopicArn", "Drift alerts and migration outcomes", s.Topic.TopicArn())
	if s.Fleet != nil {
		out("FleetStateMachineArn", "The fleet state machine (the release rules start it; or start it with {\"sources\", \"action\", ...})", s.Fleet.StateMachineArn())
	}
}

// childMachine is a state machine another runs as a child execution, and
// its fixed name (its executions' ARNs are built from it).
type childMachine struct {
	sm   awsstepfunctions.StateMachine
	name string
}

// allowChildRuns lets parent run each child as a child execution and wait
// for it (startExecution.sync:2): start it, describe and stop its
// executions, and the managed EventBridge rule through which Step Functions
// learns that a child ended.
func allowChildRuns(stack awscdk.Stack, parent awsstepfunctions.StateMachine, children ...childMachine) {
	var machines, executions []*string
	for _, c := range children {
		machines = append(machines, c.sm.StateMachineArn())
		executions = append(executions, awscdk.Stack_Of(stack).FormatArn(&awscdk.ArnComponents{
			Service: jsii.String("states"), Resource: jsii.String("execution"), ResourceName: jsii.String(c.name + ":*"),
			ArnFormat: awscdk.ArnFormat_COLON_RESOURCE_NAME,
		}))
	}
	rule := awscdk.Stack_Of(stack).FormatArn(&awscdk.ArnComponents{
		Service: jsii.String("events"), Resource: jsii.String("rule"), ResourceName: jsii.String("StepFunctionsGetEventsForStepFunctionsExecutionRule"),
	})
	parent.AddToRolePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid: jsii.String("ChildStart"), Actions: jsii.Strings("states:StartExecution"), Resources: &machines,
	}))
	parent.AddToRolePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid: jsii.String("ChildExecutions"), Actions: jsii.Strings("states:DescribeExecution", "states:StopExecution"), Resources: &executions,
	}))
	parent.AddToRolePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid: jsii.String("ChildEnded"), Actions: jsii.Strings("events:PutTargets", "events:PutRule", "events:DescribeRule"), Resources: &[]*string{rule},
	}))
}

// newStateMachine deploys one definition inline with its substitutions, a
// role that may invoke exactly the given functions (and start its own child
// executions for a Distributed Map), CloudWatch logging and X-Ray.
func newStateMachine(stack awscdk.Stack, id, name string, cfg Config, def []byte, subs map[string]*string,
	fns []awslambda.Function, topic awssns.Topic, distributedMap bool) (awsstepfunctions.StateMachine, awslogs.ILogGroup, error) {
	for _, p := range Placeholders(def) {
		if subs[p] == nil {
			return nil, nil, fmt.Errorf("%s definition: no substitution for ${%s}", id, p)
		}
	}
	role := awsiam.NewRole(stack, jsii.String(id+"StateMachineRole"), &awsiam.RoleProps{
		AssumedBy: awsiam.NewServicePrincipal(jsii.String("states.amazonaws.com"), nil),
	})
	var fnArns []*string
	for _, f := range fns {
		fnArns = append(fnArns, f.FunctionArn(), jsii.String(*f.FunctionArn()+":*"))
	}
	role.AddToPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid: jsii.String("InvokeSteps"), Actions: jsii.Strings("lambda:InvokeFunction"), Resources: &fnArns,
	}))
	if topic != nil {
		role.AddToPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Sid: jsii.String("Notify"), Actions: jsii.Strings("sns:Publish"), Resources: &[]*string{topic.TopicArn()},
		}))
	}
	if distributedMap {
		// Its own ARN, built from the fixed name (a reference would be circular).
		arn := func(resource, res string) *string {
			return awscdk.Stack_Of(stack).FormatArn(&awscdk.ArnComponents{
				Service: jsii.String("states"), Resource: jsii.String(resource), ResourceName: jsii.String(res),
				ArnFormat: awscdk.ArnFormat_COLON_RESOURCE_NAME,
			})
		}
		role.AddToPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Sid: jsii.String("DistributedMapStart"), Actions: jsii.Strings("states:StartExecution"),
			Resources: &[]*string{arn("stateMachine", name)},
		}))
		role.AddToPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Sid: jsii.String("DistributedMapChildren"), Actions: jsii.Strings("states:DescribeExecution", "states:StopExecution"),
			Resources: &[]*string{arn("execution", name+"/*")},
		}))
		role.AddToPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Sid: jsii.String("DistributedMapRedrive"), Actions: jsii.Strings("states:RedriveExecution"),
			Resources: &[]*string{arn("mapRun", name+"/*:*")},
		}))
	}
	logs := awslogs.NewLogGroup(stack, jsii.String(id+"StateMachineLogs"), &awslogs.LogGroupProps{
		LogGroupName:  jsii.String("/aws/vendedlogs/states/" + name),
		Retention:     retention(cfg.LogRetentionDays),
		RemovalPolicy: awscdk.RemovalPolicy_RETAIN,
	})
	sm := awsstepfunctions.NewStateMachine(stack, jsii.String(id+"StateMachine"), &awsstepfunctions.StateMachineProps{
		StateMachineName:        jsii.String(name),
		StateMachineType:        awsstepfunctions.StateMachineType_STANDARD,
		DefinitionBody:          awsstepfunctions.DefinitionBody_FromString(jsii.String(string(def))),
		DefinitionSubstitutions: &subs,
		Role:                    role,
		TracingEnabled:          jsii.Bool(true),
		Logs: &awsstepfunctions.LogOptions{
			Destination:          logs,
			Level:                awsstepfunctions.LogLevel_ALL,
			IncludeExecutionData: jsii.Bool(true),
		},
	})
	return sm, logs, nil
}

// Placeholders lists the ${Name} placeholders a definition uses, sorted, once each.
func Placeholders(def []byte) []string {
	seen := map[string]bool{}
	var out []string
	rest := string(def)
	for {
		i := strings.Index(rest, "${")
		if i < 0 {
			break
		}
		j := strings.IndexByte(rest[i:], '}')
		if j < 0 {
			break
		}
		name := rest[i+2 : i+j]
		if !seen[name] {
			seen[name] = true
			out = append(out, name)
		}
		rest = rest[i+j:]
	}
	return out
}

func title(s string) string { return strings.ToUpper(s[:1]) + s[1:] }

// retention maps days onto the nearest CloudWatch Logs retention at or above it.
func retention(days int) awslogs.RetentionDays {
	steps := []struct {
		d int
		r awslogs.RetentionDays
	}{
		{1, awslogs.RetentionDays_ONE_DAY}, {3, awslogs.RetentionDays_THREE_DAYS}, {5, awslogs.RetentionDays_FIVE_DAYS},
		{7, awslogs.RetentionDays_ONE_WEEK}, {14, awslogs.RetentionDays_TWO_WEEKS}, {30, awslogs.RetentionDays_ONE_MONTH},
		{60, awslogs.RetentionDays_TWO_MONTHS}, {90, awslogs.RetentionDays_THREE_MONTHS}, {180, awslogs.RetentionDays_SIX_MONTHS},
		{365, awslogs.RetentionDays_ONE_YEAR}, {731, awslogs.RetentionDays_TWO_YEARS}, {1827, awslogs.RetentionDays_FIVE_YEARS},
	}
	for _, s := range steps {
		if days <= s.d {
			return s.r
		}
	}
	return awslogs.RetentionDays_TEN_YEARS
}

func optName(n string) *string {
	if n == "" {
		return nil
	}
	return &n
}

func days(n int) awscdk.Duration { return awscdk.Duration_Days(jsii.Number(float64(n))) }

// newCatalogBucket holds the pointer (versioned: rollback) and the catalogs.
func newCatalogBucket(stack awscdk.Stack, cfg Config) awss3.Bucket {
	props := privateBucket(cfg.CatalogBucketName)
	props.Versioned = jsii.Bool(true)
	props.LifecycleRules = &[]*awss3.LifecycleRule{
		{
			Id:                          jsii.String("pointer-noncurrent-versions"),
			Prefix:                      jsii.String(cfg.PointerKey),
			NoncurrentVersionExpiration: days(cfg.PointerNoncurrentDays),
			NoncurrentVersionsToRetain:  jsii.Number(float64(cfg.PointerVersionsKept)),
		},
		{
			Id:                                  jsii.String("catalog-noncurrent-versions"),
			Prefix:                              jsii.String(cfg.CatalogPrefix),
			NoncurrentVersionExpiration:         days(cfg.CatalogNoncurrentDays),
			ExpiredObjectDeleteMarker:           jsii.Bool(true),
			AbortIncompleteMultipartUploadAfter: days(1),
		},
	}
	return awss3.NewBucket(stack, jsii.String("CatalogBucket"), props)
}

// privateBucket is what every bucket of the stack is: private, reached by
// TLS 1.2 or newer only, encrypted (SSE-S3), its objects the bucket
// owner's, and kept when the stack is deleted.
func privateBucket(name string) *awss3.BucketProps {
	return &awss3.BucketProps{
		BucketName:        optName(name),
		BlockPublicAccess: awss3.BlockPublicAccess_BLOCK_ALL(),
		EnforceSSL:        jsii.Bool(true),
		MinimumTLSVersion: jsii.Number(1.2),
		Encryption:        awss3.BucketEncryption_S3_MANAGED,
		ObjectOwnership:   awss3.ObjectOwnership_BUCKET_OWNER_ENFORCED,
		RemovalPolicy:     awscdk.RemovalPolicy_RETAIN,
	}
}

// newStagingBucket holds shards, plans and step outputs, all expiring.
func newStagingBucket(stack awscdk.Stack, cfg Config) awss3.Bucket {
	props := privateBucket(cfg.StagingBucketName)
	props.LifecycleRules = &[]*awss3.LifecycleRule{{
		Id:                                  jsii.String("expire-staging"),
		Expiration:                          days(cfg.StagingExpireDays),
		AbortIncompleteMultipartUploadAfter: days(1),
	}}
	return awss3.NewBucket(stack, jsii.String("StagingBucket"), props)
}
