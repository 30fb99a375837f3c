// Runs a state machine definition under npm aws-local-stepfunctions and
// prints one JSON line: {"status":"SUCCEEDED","output":...} or
// {"status":"FAILED","error":NAME,"cause":TEXT}.
//
//   node run-local-stepfunctions.cjs DEFINITION.json INPUT.json
//
// Environment: LSF_NODE_MODULES (the node_modules directory holding
// aws-local-stepfunctions), AWS_ENDPOINT_URL_LAMBDA (the Lambda Invoke API
// the Task states call; the library passes each Resource to the Lambda
// client as the function name), AWS_REGION and credentials, SNS_ENDPOINT
// (where the sns:publish tasks go, as the service integration would),
// LSF_STATE_MACHINE (the name of the state machine the definition stands
// for; default rocklake-migration), LSF_CHILDREN (a JSON file mapping state
// machine ARNs to definition files: the child executions that
// arn:aws:states:::states:startExecution.sync:2 states start).
'use strict';

// Node 20 has no Promise.withResolvers (Node 22 does); the library's Task
// timeout uses it.
if (typeof Promise.withResolvers !== 'function') {
  Promise.withResolvers = function withResolvers() {
    let resolve;
    let reject;
    const promise = new Promise((res, rej) => {
      resolve = res;
      reject = rej;
    });
    return { promise, resolve, reject };
  };
}

const fs = require('node:fs');
const path = require('node:path');
const { createRequire } = require('node:module');

const requireFrom = createRequire(path.join(process.env.LSF_NODE_MODULES, 'noop.js'));
const { StateMachine } = requireFrom('aws-local-stepfunctions');

const SNS_PUBLISH = 'arn:aws:states:::sns:publish';

function taskStates(states, out) {
  for (const [name, s] of Object.entries(states)) {
    if (s.Type === 'Task') out.push([name, s]);
    const inner = s.ItemProcessor || s.Iterator;
    if (inner) taskStates(inner.States, out);
    for (const b of s.Branches || []) taskStates(b.States, out);
  }
  return out;
}

async function publish(input) {
  const body = new URLSearchParams({
    Action: 'Publish',
    Version: '2010-03-31',
    TopicArn: input.TopicArn,
    Message: input.Message,
  });
  if (input.Subject) body.set('Subject', input.Subject);
  const resp = await fetch(process.env.SNS_ENDPOINT + '/', {
    method: 'POST',
    headers: {
      'Content-Type': 'application/x-www-form-urlencoded',
      // moto routes a request to its service by the credential scope; it
      // does not check the signature.
      Authorization: `AWS4-HMAC-SHA256 Credential=${process.env.AWS_ACCESS_KEY_ID}/20261201/${process.env.AWS_REGION}/sns/aws4_request, SignedHeaders=host, Signature=0`,
    },
    body,
  });
  const text = await resp.text();
  if (!resp.ok) {
    const err = new Error(`SNS Publish: HTTP ${resp.status}: ${text}`);
    err.name = 'SNS.SdkClientException';
    throw err;
  }
  const id = /<MessageId>([^<]+)<\/MessageId>/.exec(text);
  if (!id) {
    const err = new Error(`SNS Publish: no MessageId in ${text.slice(0, 300)}`);
    err.name = 'SNS.SdkClientException';
    throw err;
  }
  return { MessageId: id[1] };
}

const START_EXECUTION_SYNC = 'arn:aws:states:::states:startExecution.sync:2';
const REGION = process.env.AWS_REGION || 'us-east-1';
const crypto = require('node:crypto');

// children maps a state machine ARN to its definition (LSF_CHILDREN).
const children = {};
if (process.env.LSF_CHILDREN) {
  for (const [arn, file] of Object.entries(JSON.parse(fs.readFileSync(process.env.LSF_CHILDREN, 'utf8')))) {
    children[arn] = JSON.parse(fs.readFileSync(file, 'utf8'));
  }
}

// The Context Object as the service fills it (the library's default has
// only Execution.Input and StartTime): the failure notices link to
// $$.Execution.Id.
function contextFor(name, input) {
  const id = crypto.randomUUID();
  return {
    Execution: {
      Id: `arn:aws:states:${REGION}:000000000000:execution:${name}:${id}`,
      Name: id,
      Input: input,
      StartTime: new Date().toISOString(),
      RoleArn: `arn:aws:iam::000000000000:role/${name}`,
    },
    StateMachine: { Id: `arn:aws:states:${REGION}:000000000000:stateMachine:${name}`, Name: name },
  };
}

// A child execution, as startExecution.sync:2 runs one: the library has no
// Step Functions integration (it would invoke the Resource as a Lambda
// function), so this local handler runs the child's definition here, with
// the same handlers, and answers as the service does: the execution's
// description with its Output as JSON, or States.TaskFailed whose cause
// holds the child's error and cause.
async function startExecutionSync(input) {
  const definition = children[input.StateMachineArn];
  if (!definition) {
    const err = new Error(`no child definition for ${input.StateMachineArn}`);
    err.name = 'StepFunctions.StateMachineDoesNotExistException';
    throw err;
  }
  const name = input.StateMachineArn.split(':').pop();
  const context = contextFor(name, input.Input);
  const started = new Date().toISOString();
  const described = {
    ExecutionArn: context.Execution.Id,
    StateMachineArn: input.StateMachineArn,
    Name: context.Execution.Name,
    StartDate: started,
  };
  try {
    const output = await run(definition, input.Input, context);
    return { ...described, Status: 'SUCCEEDED', StopDate: new Date().toISOString(), Output: output, OutputDetails: { Included: true } };
  } catch (err) {
    const e = failure(err);
    const cause = { ...described, Status: 'FAILED', StopDate: new Date().toISOString(), Error: e.name, Cause: e.message };
    const taskErr = new Error(JSON.stringify(cause));
    taskErr.name = 'States.TaskFailed';
    throw taskErr;
  }
}

// run runs one definition under the library: sns:publish and
// startExecution.sync:2 states by local handler, retries at once (the
// suite's faults are not rate limits).
function run(definition, input, context) {
  const localHandlers = {};
  const retryIntervalOverrides = {};
  for (const [name, s] of taskStates(definition.States, [])) {
    if (s.Resource === SNS_PUBLISH) localHandlers[name] = publish;
    if (s.Resource === START_EXECUTION_SYNC) localHandlers[name] = startExecutionSync;
    if (s.Retry) retryIntervalOverrides[name] = 0;
  }
  const sm = new StateMachine(definition, {
    validationOptions: { checkPaths: true, checkArn: true },
  });
  return sm.run(input, {
    overrides: { taskResourceLocalHandlers: localHandlers, retryIntervalOverrides },
    context,
  }).result;
}

// A Fail state's error arrives wrapped in an ExecutionError.
function failure(err) {
  return err && err.name === 'ExecutionError' && err.cause instanceof Error ? err.cause : err;
}

async function main() {
  const definition = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
  const input = JSON.parse(fs.readFileSync(process.argv[3], 'utf8'));
  const context = contextFor(process.env.LSF_STATE_MACHINE || 'rocklake-migration', input);
  try {
    const output = await run(definition, input, context);
    process.stdout.write(JSON.stringify({ status: 'SUCCEEDED', output }) + '\n');
  } catch (err) {
    const e = failure(err);
    process.stdout.write(JSON.stringify({ status: 'FAILED', error: e.name || 'Error', cause: e.message || '' }) + '\n');
  }
}

main().catch((err) => {
  process.stderr.write(String(err && err.stack ? err.stack : err) + '\n');
  process.exit(2);
});
