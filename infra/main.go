// Command infra is the rocklake-migrate CDK app: `cdk deploy` (cdk.json runs
// `go run .`) or `go run .` alone, which synthesizes into cdk.out.
package main

import (
	"fmt"
	"os"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/jsii-runtime-go"
)

func main() {
	defer jsii.Close()
	props := &awscdk.AppProps{}
	if os.Getenv("CDK_OUTDIR") == "" {
		props.Outdir = jsii.String("cdk.out")
	}
	app := awscdk.NewApp(props)
	cfg, err := ConfigFromContext(app.Node())
	if err != nil {
		fmt.Fprintln(os.Stderr, "infra:", err)
		os.Exit(2)
	}
	stackName := cfg.Name
	if v := app.Node().TryGetContext(jsii.String("stackName")); v != nil {
		stackName = fmt.Sprint(v)
	}
	if _, err := NewMigrateStack(app, stackName, &awscdk.StackProps{
		Env: &awscdk.Environment{
			Account: envOrNil("CDK_DEFAULT_ACCOUNT"),
			Region:  envOrNil("CDK_DEFAULT_REGION"),
		},
		Description: jsii.String("rocklake-migrate: catalog format migrations (Step Functions + Lambda), drift checks"),
	}, cfg); err != nil {
		fmt.Fprintln(os.Stderr, "infra:", err)
		os.Exit(2)
	}
	CheckNag(app)
	app.Synth(nil)
}

func envOrNil(k string) *string {
	if v := os.Getenv(k); v != "" {
		return &v
	}
	return nil
}
