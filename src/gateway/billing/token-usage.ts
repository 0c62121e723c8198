/** Token counts as the gateway bills them. */
export interface TokenUsage {
  promptTokens: number;
  completionTokens: number;
}

/**
 * 'upstream': the engine reported it; 'estimated': the engine reported no
 * valid count, so the gateway counted (`proxy/token-counts.ts`'s `estimate…`); 'clamped': the
 * engine reported more than the request could use, and it was held to the
 * request's bounds (`token-bounds.ts`).
 */
export type UsageSource = 'upstream' | 'estimated' | 'clamped';
