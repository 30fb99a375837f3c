package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatchactions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsstepfunctions"
	"github.com/aws/aws-cdk-go/awscdk/v2/interfaces/interfacesawscloudwatch"
	"github.com/aws/jsii-runtime-go"

	"github.com/rocklake/rocklake-migrate/statemachine"
)

// What an operator watches and what pages on-call (operate.go).
//
// One page per event: a failure the migration or rollback definition
// catches is paged by its own SNS notice (migration id, pointer, failed
// state, error, console link), so no alarm pages on ExecutionsFailed. The
// alarms page only for what no notice reports: an execution that timed out
// or was stopped, one whose notice could not be published (it ends in the
// FailedUnreported state), and a drift check that could not look (DriftFound
// has sent its own message). Lambda error alarms stay on the dashboard
// without paging: a step error is either retried away or ends its
// execution, which pages once.

// MetricsNamespace is the namespace of the steps' embedded metrics
// (pkg/workflow.MetricsNamespace) and of the stack's log metric filters.
const MetricsNamespace = "RockLakeMigrate"

// minRunSeconds is the time a migration's work may take besides the gate's
// wait (the CLI's migrate deadline).
const minRunSeconds = 12 * 3600

// executionTimeoutSeconds is the migration's top-level TimeoutSeconds, and
// what the Lambdas are told of it (ExecutionTimeoutEnv): one number, so that
// the lock's lease cannot fall short of the execution.
func executionTimeoutSeconds(cfg Config) int { return cfg.ExecutionTimeoutHours * 3600 }

// MigrationDefinition is statemachine/migration.asl.json with this
// deployment's settings: the Map's MaxConcurrency is the shard concurrency
// (the reserved concurrency of export and transform), and the top-level
// TimeoutSeconds is executionTimeoutHours. Everything else is the file's.
func MigrationDefinition(cfg Config) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(statemachine.Migration))
	dec.UseNumber()
	var def map[string]any
	if err := dec.Decode(&def); err != nil {
		return nil, fmt.Errorf("migration definition: %w", err)
	}
	states, _ := def["States"].(map[string]any)
	shards, _ := states["Shards"].(map[string]any)
	if shards == nil || shards["Type"] != "Map" {
		return nil, fmt.Errorf("migration definition: no Map state Shards to set MaxConcurrency on")
	}
	shards["MaxConcurrency"] = cfg.ShardConcurrency
	// The execution's clock runs while a postponed migration waits at the
	// gate: a timeout inside the wait would end the run without its Abort,
	// leaving the lock and the source's checkpoint behind.
	gate, _ := states[statemachine.StepGate].(map[string]any)
	if gate == nil {
		return nil, fmt.Errorf("migration definition: no Gate state")
	}
	wait, err := gate["TimeoutSeconds"].(json.Number).Int64()
	if err != nil {
		return nil, fmt.Errorf("migration definition: the Gate's TimeoutSeconds: %w", err)
	}
	if limit := int64(cfg.ExecutionTimeoutHours) * 3600; limit <= wait+minRunSeconds {
		return nil, fmt.Errorf("context executionTimeoutHours %d: a postponed migration waits up to %d h at the gate, and the run needs %d h besides: want more than %d",
			cfg.ExecutionTimeoutHours, wait/3600, minRunSeconds/3600, (wait+minRunSeconds)/3600)
	}
	def["TimeoutSeconds"] = executionTimeoutSeconds(cfg)
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(def); err != nil {
		return nil, fmt.Errorf("migration definition: %w", err)
	}
	return out.Bytes(), nil
}

// alarms pages through the topic for what no notice reports.
func (s *MigrateStack) alarms(cfg Config, logs map[string]awslogs.ILogGroup) {
	stack := s.Stack
	action := awscloudwatchactions.NewSnsAction(s.Topic)
	five := &awscloudwatch.MetricOptions{Period: awscdk.Duration_Minutes(jsii.Number(5)), Statistic: jsii.String("Sum")}
	alarm := func(id, desc string, m awscloudwatch.IMetric, page bool) {
		a := awscloudwatch.NewAlarm(stack, jsii.String(id), &awscloudwatch.AlarmProps{
			AlarmName:          jsii.String(cfg.Name + "-" + id),
			AlarmDescription:   jsii.String(desc),
			Metric:             m,
			Threshold:          jsii.Number(1),
			EvaluationPeriods:  jsii.Number(1),
			ComparisonOperator: awscloudwatch.ComparisonOperator_GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
			TreatMissingData:   awscloudwatch.TreatMissingData_NOT_BREACHING,
		})
		if page {
			a.AddAlarmAction(action)
		}
		s.alarmList = append(s.alarmList, a)
	}
	// A count of log events of one state machine, as a metric.
	logCount := func(id, name string, lg awslogs.ILogGroup, pattern awslogs.IFilterPattern) awscloudwatch.Metric {
		f := awslogs.NewMetricFilter(stack, jsii.String(id+"Filter"), &awslogs.MetricFilterProps{
			LogGroup:        lg,
			FilterPattern:   pattern,
			MetricNamespace: jsii.String(MetricsNamespace),
			MetricName:      jsii.String(name),
			MetricValue:     jsii.String("1"),
		})
		return f.Metric(five)
	}
	unreported := func(lg awslogs.ILogGroup, id, name string) awscloudwatch.Metric {
		return logCount(id, name, lg, awslogs.FilterPattern_All(
			awslogs.FilterPattern_StringValue(jsii.String("$.type"), jsii.String("="), jsii.String("FailStateEntered")),
			awslogs.FilterPattern_StringValue(jsii.String("$.details.name"), jsii.String("="), jsii.String("FailedUnreported")),
		))
	}
	machines := []struct {
		id, what string
		m        awsstepfunctions.StateMachine
	}{{"Migration", "migration", s.Migration}, {"Rollback", "rollback", s.Rollback}}
	if s.Fleet != nil {
		// A fleet run's own failures (a canary, pointers, its listing) go
		// out in its summary or its failure notice; its pointers' runs page
		// as the migration's and rollback's.
		machines = append(machines, struct {
			id, what string
			m        awsstepfunctions.StateMachine
		}{"Fleet", "fleet", s.Fleet})
	}
	for _, sm := range machines {
		alarm(sm.id+"TimedOut", "A "+sm.what+" execution timed out (top-level TimeoutSeconds): no notice was sent; see the execution's history",
			sm.m.MetricTimedOut(five), true)
		alarm(sm.id+"Aborted", "A "+sm.what+" execution was stopped: no notice was sent; Abort did not run (rocklake-migrate status, then abort or unlock)",
			sm.m.MetricAborted(five), true)
		alarm(sm.id+"FailedUnreported", "A "+sm.what+" execution failed and its failure notice could not be published: see the execution's history",
			unreported(logs[sm.id], sm.id+"FailedUnreported", sm.id+"FailedUnreported"), true)
	}
	alarm("DriftCheckBroken", "The drift check could not look (an error other than DriftFound, whose findings went out as their own message)",
		logCount("DriftCheckBroken", "DriftCheckBroken", logs["Drift"], awslogs.FilterPattern_All(
			awslogs.FilterPattern_StringValue(jsii.String("$.type"), jsii.String("="), jsii.String("ExecutionFailed")),
			awslogs.FilterPattern_StringValue(jsii.String("$.details.error"), jsii.String("!="), jsii.String("DriftFound")),
		)), true)
	for _, f := range Functions {
		alarm(title(f.Name)+"Errors", "The "+f.Name+" Lambda returned errors (not paged: a failed execution pages once, through its notice)",
			s.Functions[f.Name].MetricErrors(five), false)
	}
}

// dashboard is what an operator watches a migration on: executions, the
// Map's progress, the Lambdas' errors and durations, rows per second, the
// alarms, and the step log lines that failed.
func (s *MigrateStack) dashboard(cfg Config) awscloudwatch.Dashboard {
	stack := s.Stack
	period := awscdk.Duration_Minutes(jsii.Number(1))
	sum := &awscloudwatch.MetricOptions{Period: period, Statistic: jsii.String("Sum")}
	step := func(name, stat, label string) awscloudwatch.Metric {
		return awscloudwatch.NewMetric(&awscloudwatch.MetricProps{
			Namespace: jsii.String(MetricsNamespace), MetricName: jsii.String(name),
			DimensionsMap: &map[string]*string{"Step": jsii.String(label)},
			Statistic:     jsii.String(stat), Period: period, Label: jsii.String(label),
		})
	}
	rate := func(stepName string) awscloudwatch.MathExpression {
		id := "rows" + strings.ToLower(stepName) // ids are unique per graph
		return awscloudwatch.NewMathExpression(&awscloudwatch.MathExpressionProps{
			Expression:   jsii.String(id + " / PERIOD(" + id + ")"),
			UsingMetrics: &map[string]awscloudwatch.IMetric{id: step("Rows", "Sum", stepName)},
			Label:        jsii.String(stepName + " rows/s"),
			Period:       period,
		})
	}
	graph := func(title string, left ...awscloudwatch.IMetric) awscloudwatch.GraphWidget {
		return awscloudwatch.NewGraphWidget(&awscloudwatch.GraphWidgetProps{
			Title: jsii.String(title), Left: &left, Width: jsii.Number(8), Height: jsii.Number(6),
		})
	}
	executions := func(sm awsstepfunctions.StateMachine) []awscloudwatch.IMetric {
		return []awscloudwatch.IMetric{sm.MetricStarted(sum), sm.MetricSucceeded(sum), sm.MetricFailed(sum), sm.MetricTimedOut(sum), sm.MetricAborted(sum)}
	}
	var errs, durs []awscloudwatch.IMetric
	for _, f := range Functions {
		fn := s.Functions[f.Name]
		errs = append(errs, fn.MetricErrors(&awscloudwatch.MetricOptions{Period: period, Statistic: jsii.String("Sum"), Label: jsii.String(f.Name)}))
		durs = append(durs, fn.MetricDuration(&awscloudwatch.MetricOptions{Period: period, Statistic: jsii.String("Maximum"), Label: jsii.String(f.Name + " max")}))
	}
	var alarms []interfacesawscloudwatch.IAlarmRef
	for _, a := range s.alarmList {
		alarms = append(alarms, a)
	}
	var logGroups []awslogs.ILogGroup
	for _, f := range Functions {
		logGroups = append(logGroups, s.Functions[f.Name].LogGroup())
	}
	d := awscloudwatch.NewDashboard(stack, jsii.String("Dashboard"), &awscloudwatch.DashboardProps{
		DashboardName:   jsii.String(cfg.Name),
		DefaultInterval: awscdk.Duration_Hours(jsii.Number(3)),
	})
	d.AddWidgets(
		graph("Migration executions", executions(s.Migration)...),
		graph("Shards (Map progress): shard steps done",
			step("Rows", "SampleCount", statemachine.StepExportTransformShard),
			s.Functions["export"].MetricInvocations(&awscloudwatch.MetricOptions{Period: period, Statistic: jsii.String("Sum"), Label: jsii.String("export invocations")})),
		graph("Rows per second", rate(statemachine.StepImport), rate(statemachine.StepExportTransformShard)),
	)
	d.AddWidgets(
		graph("Lambda errors", errs...),
		graph("Lambda durations (ms)", durs...),
		graph("Rollback and drift executions", append(executions(s.Rollback), s.Drift.MetricFailed(sum))...),
	)
	if s.Fleet != nil {
		// A fleet run's progress: its own executions, and the child
		// executions of the migration state machine it started (above).
		d.AddWidgets(graph("Fleet executions", executions(s.Fleet)...))
	}
	d.AddWidgets(
		awscloudwatch.NewAlarmStatusWidget(&awscloudwatch.AlarmStatusWidgetProps{
			Title: jsii.String("Alarms"), Alarms: &alarms, Width: jsii.Number(8), Height: jsii.Number(6),
		}),
		awscloudwatch.NewLogQueryWidget(&awscloudwatch.LogQueryWidgetProps{
			Title:         jsii.String("Failed steps (filter by migration_id in Logs Insights)"),
			LogGroupNames: logGroupNames(logGroups),
			QueryLines: jsii.Strings(
				"fields @timestamp, migration_id, step, shard, error_name, error, request_id",
				`filter msg = "step failed"`,
				"sort @timestamp desc",
				"limit 50",
			),
			Width: jsii.Number(16), Height: jsii.Number(6),
		}),
	)
	return d
}

func logGroupNames(lgs []awslogs.ILogGroup) *[]*string {
	out := make([]*string, 0, len(lgs))
	for _, lg := range lgs {
		out = append(out, lg.LogGroupName())
	}
	return &out
}
