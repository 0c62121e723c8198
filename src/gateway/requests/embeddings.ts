import { estimateInputTokens } from '../proxy/token-counts.js';
import type { BilledEndpoint } from './endpoint.js';
import { validateEmbeddingsRequest } from './validate.js';

/**
 * Embeddings. `encoding_format` (float or base64) goes to the engine
 * unchanged, so base64 vectors are relayed as the engine encoded them.
 */
export const EMBEDDINGS: BilledEndpoint = {
  name: 'embeddings',
  task: 'embedding',
  path: '/embeddings',
  validate: (body) => validateEmbeddingsRequest(body),
  // 1,024 floats a vector: found, checked and relayed as text, never parsed into numbers and
  // written back.
  liftArrays: 'embedding',
  shapeAnswer(answer) {
    // Clients index results by position: keep them in input order whatever order the engine used.
    if (Array.isArray(answer.data)) (answer.data as Array<{ index: number }>).sort((a, b) => a.index - b.index);
  },
  begin: (request) => ({
    bounded: request.body,
    sentBytes: request.bodyBytes,
    bodyFor: (target) => ({ ...request.body, model: target.servedModelName }),
    estimate: () => ({ promptTokens: estimateInputTokens(request.body.input), completionTokens: 0 }),
    stream: null,
  }),
};
