/** Token counts as the gateway bills them. */
export interface TokenUsage {
  promptTokens: number;
  completionTokens: number;
  /**
   * Of `promptTokens`, those the engine reported read from its prefix cache (OpenAI's convention:
   * counted inside the prompt), billed at the model's cached-input price; absent: none.
   */
  cachedTokens?: number;
  /** Of `completionTokens`, those the engine reported as reasoning: shown, and billed as output. */
  reasoningTokens?: number;
}

/**
 * 'upstream': the engine reported it; 'estimated': the engine reported no
 * valid count, so the gateway counted (`proxy/token-counts.ts`'s `estimate…`); 'clamped': the
 * engine reported more than the request could use, and it was held to the
 * request's bounds (`token-bounds.ts`).
 */
export type UsageSource = 'upstream' | 'estimated' | 'clamped';
