/** A bad flag or environment value; the CLI prints it and exits 2. */
export class SimCliError extends Error {
  override name = 'SimCliError';
}
