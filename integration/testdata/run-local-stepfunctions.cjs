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
// (where the sns:publish tasks go, as the service integration would).
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

async function main() {
  const definition = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
  const input = JSON.parse(fs.readFileSync(process.argv[3], 'utf8'));
  const localHandlers = {};
  const retryIntervalOverrides = {};
  for (const [name, s] of taskStates(definition.States, [])) {
    if (s.Resource === SNS_PUBLISH) localHandlers[name] = publish;
    // Retries at once: the suite's faults are not rate limits.
    if (s.Retry) retryIntervalOverrides[name] = 0;
  }
  const sm = new StateMachine(definition, {
    validationOptions: { checkPaths: true, checkArn: true },
  });
  // The Context Object as the service fills it (the library's default has
  // only Execution.Input and StartTime): the failure notices link to
  // $$.Execution.Id.
  const region = process.env.AWS_REGION || 'us-east-1';
  const name = require('node:crypto').randomUUID();
  const stateMachineArn = `arn:aws:states:${region}:000000000000:stateMachine:rocklake-migration`;
  const context = {
    Execution: {
      Id: `arn:aws:states:${region}:000000000000:execution:rocklake-migration:${name}`,
      Name: name,
      Input: input,
      StartTime: new Date().toISOString(),
      RoleArn: `arn:aws:iam::000000000000:role/rocklake-migration`,
    },
    StateMachine: { Id: stateMachineArn, Name: 'rocklake-migration' },
  };
  const execution = sm.run(input, {
    overrides: { taskResourceLocalHandlers: localHandlers, retryIntervalOverrides },
    context,
  });
  try {
    const output = await execution.result;
    process.stdout.write(JSON.stringify({ status: 'SUCCEEDED', output }) + '\n');
  } catch (err) {
    // A Fail state's error arrives wrapped in an ExecutionError.
    const e = err && err.name === 'ExecutionError' && err.cause instanceof Error ? err.cause : err;
    process.stdout.write(JSON.stringify({ status: 'FAILED', error: e.name || 'Error', cause: e.message || '' }) + '\n');
  }
}

main().catch((err) => {
  process.stderr.write(String(err && err.stack ? err.stack : err) + '\n');
  process.exit(2);
});
