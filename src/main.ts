import { ConfigError, loadConfig } from './config.js';
import { EngineDefinitionError } from './engines/definitions.js';
import { startGateway, type RunningGateway } from './gateway.js';

/** `npm start`: the gateway as a process, with a first-start banner on stdout. */
async function main(): Promise<void> {
  let gateway: RunningGateway;
  try {
    const config = loadConfig(process.env);
    gateway = await startGateway(config, { env: process.env });
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
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}

function printBanner(gateway: RunningGateway): void {
  const base = gateway.services.config.publicUrl ?? gateway.url;
  const lines = [`Tollgate is listening on ${base}`];
  if (gateway.adminToken.generated) {
    lines.push('', `Operator token for the management API and the tollgate CLI${gateway.adminToken.file ? ` (saved in ${gateway.adminToken.file})` : ''}:`, `  ${gateway.adminToken.token}`);
  }
  const demo = gateway.demo;
  if (demo) {
    lines.push('', `A demo organization was created with ${demo.credit} ${gateway.services.config.currency} of credit and this API key (shown once, keep it):`, `  ${demo.keySecret}`);
    if (demo.chatModel) {
      const request = (extra: string) =>
        `  curl ${base}/v1/chat/completions -H "Authorization: Bearer ${demo.keySecret}" -H "Content-Type: application/json" \\\n    -d '{"model":"${demo.chatModel}","messages":[{"role":"user","content":"Hello!"}]${extra}}'`;
      lines.push('', 'Make a first request:', request(''), '', 'Or stream it:', request(',"stream":true'));
    }
    lines.push(
      '',
      `Its owner signs in as ${demo.owner.email} with the password ${demo.owner.password} (shown once):`,
      `  curl -i ${base}/auth/sign-in -H "Content-Type: application/json" -d '{"email":"${demo.owner.email}","password":"${demo.owner.password}"}'`,
    );
  }
  process.stdout.write(`${lines.join('\n')}\n`);
}

await main();
