/**
 * The CLI's failures, by exit code: a `UsageError` (2) means the command line
 * is wrong and nothing was sent; a `CliError` (1) means the command could not
 * be carried out (gateway unreachable, API error, no token).
 *
 * @example
 * throw new UsageError('--rpm must be a whole number from 1 to 1000000');
 */
export class UsageError extends Error {
  override name = 'UsageError';
}

export class CliError extends Error {
  override name = 'CliError';
}

/** An error answer of the management API, with its envelope's code and details. */
export class ApiError extends CliError {
  override name = 'ApiError';
  constructor(
    message: string,
    readonly code: string,
    readonly status: number,
    readonly details: { field: string; message: string }[] = [],
  ) {
    super(message);
  }
}
