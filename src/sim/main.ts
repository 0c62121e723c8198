// CLI entry: `tsx src/sim/main.ts` (npm run sim). Flags and env are in cli.ts.
// Also runs bundled (`node sim.mjs ...`) as `vllm serve`'s stand-in in test
// containers; started through a file or link named `vllm`, it drops the
// leading `serve` like vLLM's own command.
import path from 'node:path';
import { parseSimArgs, SIM_USAGE, SimCliError } from './cli.js';
import { startSimulator } from './server.js';

/** The arguments after the script, without `serve` when run as `vllm serve ...`. */
function simArgv(argv: string[]): string[] {
  const args = argv.slice(2);
  const script = argv[1] === undefined ? '' : path.basename(argv[1]);
  if (script === 'vllm' && args[0] === 'serve') args.shift();
  return args;
}

async function main(): Promise<void> {
  let parsed;
  try {
    parsed = parseSimArgs(simArgv(process.argv), process.env);
  } catch (error) {
    if (!(error instanceof SimCliError)) throw error;
    process.stderr.write(`sim: ${error.message}\n\n${SIM_USAGE}`);
    process.exit(2);
  }
  if (parsed.help) {
    process.stdout.write(SIM_USAGE);
    return;
  }
  const { options, ignored } = parsed;
  if (ignored) process.stderr.write(`sim: ignoring vLLM options: ${ignored.join(' ')}\n`);
  const sim = await startSimulator(options);
  const models = options.models.map((m) => `${m.name} (${m.reasoning ? 'reasoning' : m.task})`).join(', ');
  process.stdout.write(`vLLM simulator listening on ${sim.url}\nmodels: ${models}\n`);
  const stop = (signal: NodeJS.Signals): void => {
    process.stdout.write(`sim: ${signal}, closing\n`);
    sim.close().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}

main().catch((error: unknown) => {
  process.stderr.write(`sim: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
