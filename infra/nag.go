package main

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/jsii-runtime-go"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"
)

// CheckNag applies cdk-nag's AwsSolutions rules to the app: synthesis
// reports every finding, and one not suppressed below is an error
// (`cdk synth` fails on it; the infra tests assert there is none).
func CheckNag(app awscdk.App) {
	awscdk.Aspects_Of(app).Add(cdknag.NewAwsSolutionsChecks(&cdknag.NagPackProps{Verbose: jsii.Bool(true)}), nil)
}

// suppress is a finding this stack accepts, and why.
type suppress struct {
	id, reason string
	appliesTo  []string // regular expressions (ECMA-262) over the finding's "appliesTo"; none: the whole rule
}

// nagSuppressions are the stack's accepted findings, each with its reason.
var nagSuppressions = []suppress{
	{"AwsSolutions-S1", "Server access logs are not kept: SlateDB makes many small requests per second on these buckets, and per-request logs would cost more than the catalog; CloudTrail S3 data events are the audit trail where one is wanted.", nil},
	{"AwsSolutions-IAM5", "Object actions are scoped to a prefix (catalogs/*, migrations/*): a catalog is a tree of SlateDB objects and a migration a tree of shards, named at run time.", []string{`^Resource::(<(Catalog|Staging)Bucket[A-Za-z0-9]+\.Arn>|arn:<AWS::Partition>:s3:::[^/]+)/.+\*$`}},
	{"AwsSolutions-IAM5", "Invoking a function's versions and aliases (<arn>:*) is how Step Functions calls a Lambda; only this stack's functions are named.", []string{`^Resource::<[A-Za-z0-9]+Function[A-Za-z0-9]+\.Arn>:\*$`}},
	{"AwsSolutions-IAM5", "The Distributed Map's child executions and map runs have generated names under this state machine's own name; nothing else is reachable.", []string{`^Resource::arn:<AWS::Partition>:states:.*:(execution|mapRun):.*$`}},
	{"AwsSolutions-IAM5", "Actions without resource-level permissions, which AWS grants only on *: X-Ray tracing (xray:PutTraceSegments, PutTelemetryRecords, GetSampling*) and the state machines' vended log delivery (logs:CreateLogDelivery, PutResourcePolicy, DescribeLogGroups, ...).", []string{`^Resource::\*$`}},
}

// addNagSuppressions records the stack's accepted findings on it.
func addNagSuppressions(stack awscdk.Stack) {
	var list []*cdknag.NagPackSuppression
	for _, s := range nagSuppressions {
		sup := &cdknag.NagPackSuppression{Id: jsii.String(s.id), Reason: jsii.String(s.reason)}
		if len(s.appliesTo) > 0 {
			applies := make([]interface{}, 0, len(s.appliesTo))
			for _, re := range s.appliesTo {
				applies = append(applies, &cdknag.RegexAppliesTo{Regex: jsii.String("/" + re + "/g")})
			}
			sup.AppliesTo = &applies
		}
		list = append(list, sup)
	}
	cdknag.NagSuppressions_AddStackSuppressions(stack, &list, nil)
}
