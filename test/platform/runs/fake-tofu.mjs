#!/usr/bin/env node
// A stand-in for the `tofu` command line, for the run tests. It records each
// call (arguments, environment, working folder, the tfvars file, the key
// file's mode) as a JSON line in $FAKE_TOFU_RECORDS, and behaves as the run's
// `mode` input says: ok, fail, init-fails, hang, hang-hard (ignores SIGINT),
// leak (prints the private key and the sensitive input), web (an output
// `web_port` = the `port` input), slow (prints `count` lines 100 ms apart),
// spin (a busy loop that never ends), files (writes `count` files of 4 MiB,
// 100 ms apart, then never ends).
import { appendFileSync, existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';

const [command, ...args] = process.argv.slice(2);
const cwd = process.cwd();
const vars = existsSync('tollgate.auto.tfvars.json')
  ? JSON.parse(readFileSync('tollgate.auto.tfvars.json', 'utf8'))
  : {};
const mode = vars.mode ?? 'ok';
const keyFile = vars.tollgate_ssh_private_key_file;
const state = existsSync('terraform.tfstate') ? JSON.parse(readFileSync('terraform.tfstate', 'utf8')) : null;

appendFileSync(
  process.env.FAKE_TOFU_RECORDS,
  `${JSON.stringify({
    command,
    args,
    cwd,
    pid: process.pid,
    ppid: process.ppid,
    env: process.env,
    vars,
    files: existsSync('main.tf') ? ['main.tf'] : [],
    keyFileMode: keyFile && existsSync(keyFile) ? (statSync(keyFile).mode & 0o777).toString(8) : null,
    keyFileStart: keyFile && existsSync(keyFile) ? readFileSync(keyFile, 'utf8').slice(0, 35) : null,
    keyFolder: keyFile ? path.dirname(keyFile) : null,
    stateSerial: state?.serial ?? null,
  })}\n`,
);

// The stand-in tool's own work: 'slow' takes a while per step, as a real apply does (time it spends, not a wait in a test).
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

if (command === 'init') {
  console.log('Initializing the backend...');
  if (mode === 'init-fails') {
    console.error('Error: Failed to query available provider packages');
    process.exit(1);
  }
  console.log('OpenTofu has been successfully initialized!');
  process.exit(0);
}

if (command === 'apply') {
  writeFileSync('terraform.tfstate', JSON.stringify({ version: 4, serial: (state?.serial ?? 0) + 1, resources: [] }));
  if (mode === 'spin') {
    console.log('fake: spinning');
    for (;;);
  }
  if (mode === 'files') {
    const count = Number(vars.count ?? 2);
    const block = Buffer.alloc(4 * 1024 * 1024, 1);
    for (let i = 1; i <= count; i++) {
      writeFileSync(`fill-${i}.bin`, block);
      console.log(`fake: wrote file ${i} of ${count} (4 MiB)`);
      await sleep(100);
    }
    console.log('fake: all files written, and never finishing');
    setInterval(() => {}, 1000);
  } else if (mode === 'hang' || mode === 'hang-hard') {
    process.on('SIGINT', () => {
      console.log('Interrupt received. Gracefully shutting down...');
      if (mode === 'hang') process.exit(130);
    });
    console.log('fake: applying, and never finishing');
    setInterval(() => {}, 1000);
  } else {
    const count = Number(vars.count ?? 2);
    for (let i = 1; i <= count; i++) {
      console.log(`fake: step ${i} of ${count}`);
      if (mode === 'slow') await sleep(100);
    }
    if (mode === 'leak') {
      console.log(readFileSync(keyFile, 'utf8'));
      console.log(`the password is ${vars.password}`);
    }
    if (mode === 'fail') {
      console.error('Error: the fake provider refused');
      process.exit(2);
    }
    console.log('Apply complete! Resources: 1 added, 0 changed, 0 destroyed.');
    process.exit(0);
  }
}

if (command === 'output') {
  const outputs = {
    greeting: { value: `hello ${vars.tollgate_cluster_id ?? ''}`, type: 'string', sensitive: false },
    token: { value: 'sekret-output', type: 'string', sensitive: true },
  };
  if (mode === 'web') outputs.web_port = { value: Number(vars.port), type: 'number', sensitive: false };
  // As the real tool warns on stderr (an unreadable CLI configuration, a deprecation): the outputs are stdout alone.
  console.error('fake: a notice on stderr, not part of the outputs');
  console.log(JSON.stringify(outputs));
  process.exit(0);
}
