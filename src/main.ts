import { ConfigError, loadConfig } from './config/index.js';
import { EngineDefinitionError } from './gateway/engines/definitions.js';
import { HeapGrowth, setHeapGrowth } from './shared/heap-growth.js';
import { startGateway, type RunningGateway } from './server/start.js';

/** `npm start`: the gateway as a process, with a first-start banner on stdout. */
async function main(): Promise<void> {
  const heapGrowth = new HeapGrowth(setHeapGrowth());
  let gateway: RunningGateway;
  try {
    const config = loadConfig(process.env);
    gateway = await startGateway(config, { env: process.env, heapGrowth });
  } catch (error) {
    if (error instanceof ConfigError || error instanceof EngineDefinitionError) {
      process.stderr.write(`tollgate: ${error.message}\n`);
      process.exit(2);
    }
    throw error;
  }
  printBanner(gateway);
  // SIGTERM (a rolling deploy) and SIGINT drain first: nothing in flight is lost or left unbilled.
  // A second signal stops at once.
  const stop = async () => {
    process.once('SIGTERM', () => process.exit(1));
    process.once('SIGINT', () => process.exit(1));
    await gateway.drain();
    await gateway.close();
    process.exit(0);
  };
  // A signal listener's return value is dropped: a failed drain or close is reported here and ends
  // the process with 1.
  const onSignal = () => {
    stop().catch((error: unknown) => {
      process.stderr.write(
        `tollgate: the shutdown failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
      );
      process.exit(1);
    });
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
}

function printBanner(gateway: RunningGateway): void {
  const base = gateway.services.config.publicUrl ?? gateway.url;
  const lines = [
    `Tollgate is listening on ${base}`,
    `The portal (API keys, usage, wallet, stacks, clusters): ${base}/portal`,
  ];
  if (gateway.adminToken.generated) {
    lines.push(
      '',
      `Operator token for the management API and the tollgate CLI${gateway.adminToken.file ? ` (saved in ${gateway.adminToken.file})` : ''}:`,
      `  ${gateway.adminToken.token}`,
    );
  }
  const demo = gateway.demo;
  if (demo) {
    lines.push(
      '',
      `A demo organization was created with ${demo.credit} ${gateway.services.config.currency} of credit and this API key (shown once, keep it):`,
      `  ${demo.keySecret}`,
    );
    if (demo.chatModel) {
      const request = (extra: string) =>
        `  curl ${base}/v1/chat/completions -H "Authorization: Bearer ${demo.keySecret}" -H "Content-Type: application/json" \\\n    -d '{"model":"${demo.chatModel}","messages":[{"role":"user","content":"Hello!"}]${extra}}'`;
      lines.push('', 'Make a first request:', request(''), '', 'Or stream it:', request(',"stream":true'));
    }
    lines.push(
      '',
      `Sign in to the portal at ${base}/portal/sign-in as ${demo.owner.email} with the password ${demo.owner.password} (shown once).`,
      'Or sign in from a script:',
      `  curl -i ${base}/auth/sign-in -H "Content-Type: application/json" -d '{"email":"${demo.owner.email}","password":"${demo.owner.password}"}'`,
    );
  }
  if (!gateway.services.config.seedDemo && gateway.firstStart)
    lines.push('', ...nextSteps(base, !gateway.adminToken.generated && gateway.adminToken.file === null));
  process.stdout.write(`${lines.join('\n')}\n`);
}

/** With the demo off and nothing in the store yet: what an operator does before a first request. */
function nextSteps(base: string, tokenFromEnvironment: boolean): string[] {
  const token = tokenFromEnvironment
    ? 'the operator token in TOLLGATE_ADMIN_TOKEN'
    : 'the operator token above (TOLLGATE_ADMIN_TOKEN, or TOLLGATE_DATA_DIR for the CLI to read it)';
  return [
    'No organizations yet (TOLLGATE_SEED_DEMO=false). Next, with the tollgate CLI and ' + token + ':',
    // One export for every command below: a --url on the first only left the others on
    // 127.0.0.1:8080.
    `  export TOLLGATE_URL=${base}`,
    '  tollgate models add --id MODEL --name "NAME" --hf-repo ORG/REPO --task chat --context-length 32768',
    '  tollgate prices set --model MODEL --input 0.15 --output 0.60',
    '  tollgate orgs create --name NAME, then tollgate wallet topup --org ORG --amount 50 and tollgate keys create --org ORG --name first',
    'Each model needs an engine in engines/engines.json (TOLLGATE_ENGINES_FILE); see docs/operating.md and docs/production.md.',
  ];
}

await main();
