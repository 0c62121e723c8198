// vLLM's error bodies (>= v0.10.1): `{"error":{"message","type","param","code"}}`,
// `code` being the HTTP status and `type` a Python class name or HTTP phrase.

/** An error that answers the request with a vLLM error body. */
export class SimHttpError extends Error {
  override name = 'SimHttpError';

  constructor(
    readonly status: number,
    readonly type: string,
    message: string,
    readonly param: string | null = null,
  ) {
    super(message);
  }

  /** The JSON body vLLM would send. */
  body(): string {
    return errorJson(this.status, this.type, this.message, this.param);
  }
}

/**
 * Serializes a vLLM error body.
 *
 * @example
 * errorJson(404, 'NotFoundError', 'The model `x` does not exist.', 'model');
 */
export function errorJson(code: number, type: string, message: string, param: string | null = null): string {
  return JSON.stringify({ error: { message, type, param, code } });
}

/**
 * vLLM's 400 for a value its own checks reject (`VLLMValidationError`, `ValueError`).
 *
 * @example
 * throw badRequest('Stream options can only be defined when `stream=True`.', 'stream_options');
 */
export function badRequest(message: string, param: string | null = null): SimHttpError {
  return new SimHttpError(400, 'BadRequestError', message, param);
}

/**
 * FastAPI/pydantic request validation failure: type "Bad Request", param the dotted location.
 *
 * @example
 * throw invalidBody(['messages'], 'missing', 'Field required');
 */
export function invalidBody(loc: ReadonlyArray<string | number>, kind: string, msg: string): SimHttpError {
  const tuple = ['body', ...loc].map((part) => (typeof part === 'number' ? String(part) : `'${part}'`)).join(', ');
  const message = `1 validation error:\n  {'type': '${kind}', 'loc': (${tuple}), 'msg': '${msg}'}`;
  return new SimHttpError(400, 'Bad Request', message, ['body', ...loc].join('.'));
}

/**
 * vLLM's 404 for a model it does not serve.
 *
 * @example
 * throw modelNotFound('gpt-4');
 */
export function modelNotFound(name: unknown): SimHttpError {
  // A model that is not a string (an object, a list) is shown as it was sent, not as `[object
  // Object]`.
  return new SimHttpError(
    404,
    'NotFoundError',
    `The model \`${typeof name === 'string' ? name : JSON.stringify(name)}\` does not exist.`,
    'model',
  );
}

/**
 * vLLM's 500 (engine failure, `finish_reason == "error"`).
 *
 * @example
 * throw internalError('EngineCore encountered an issue.');
 */
export function internalError(message: string): SimHttpError {
  return new SimHttpError(500, 'InternalServerError', message, null);
}
