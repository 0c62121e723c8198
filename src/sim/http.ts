import type { IncomingMessage, ServerResponse } from 'node:http';
import { invalidBody, SimHttpError } from './errors.js';
import { isObject, type JsonObject } from './fields.js';

/** Bodies above this answer 413 rather than filling memory. */
const MAX_BODY_BYTES = 32 * 1024 * 1024;

const JSON_TYPE = 'application/json';

/**
 * Sends a JSON text with its length, as uvicorn does.
 *
 * @example
 * sendJson(res, 200, '{"ok":true}');
 */
export function sendJson(res: ServerResponse, status: number, json: string): void {
  res.writeHead(status, { 'content-type': JSON_TYPE, 'content-length': Buffer.byteLength(json) });
  res.end(json);
}

/**
 * Answers with a vLLM error body, or cuts the connection when a response already started.
 *
 * @example
 * sendError(res, modelNotFound('gpt-4'));
 */
export function sendError(res: ServerResponse, error: SimHttpError): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  sendJson(res, error.status, error.body());
}

/**
 * Sends FastAPI's `{"detail": ...}` body (404 and 405 on unknown routes).
 *
 * @example
 * sendDetail(res, 404, 'Not Found');
 */
export function sendDetail(res: ServerResponse, status: number, detail: string): void {
  sendJson(res, status, JSON.stringify({ detail }));
}

/**
 * Reads the whole request body as text.
 *
 * @example
 * const text = await readBody(req);
 */
export function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_BODY_BYTES) {
        reject(new SimHttpError(413, 'Payload Too Large', 'Request body too large.'));
        req.destroy();
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => {
      resolve(chunks.length === 1 ? (chunks[0] as Buffer).toString('utf8') : Buffer.concat(chunks).toString('utf8'));
    });
    req.on('error', reject);
    // A client that goes away mid-body never sends 'end'.
    req.on('close', () => {
      if (!req.complete) reject(new SimHttpError(400, 'Bad Request', 'Client closed the request.'));
    });
  });
}

/**
 * Parses a request body that must be a JSON object, failing like FastAPI does.
 *
 * @example
 * const body = parseJsonObject('{"model":"sim-chat"}');
 */
export function parseJsonObject(text: string): JsonObject {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw invalidBody([], 'json_invalid', 'JSON decode error');
  }
  if (!isObject(value)) throw invalidBody([], 'model_attributes_type', 'Input should be a valid dictionary or object');
  return value;
}
