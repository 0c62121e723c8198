/**
 * What an organization's next request in a band is expected to generate: a moving average over
 * about its last eight requests to a model. Flow control charges a dispatched request that much to
 * its organization's share at once, and corrects it by what the engine generated when it ends.
 */
export class CompletionForecast {
  private readonly averages = new Map<string, number>();

  /** Organizations and bands remembered: more are forgotten oldest first. */
  constructor(private readonly kept = 10_000) {}

  of(orgId: string, band: string): number {
    return this.averages.get(`${orgId} ${band}`) ?? 0;
  }

  learn(orgId: string, band: string, completionTokens: number): void {
    const key = `${orgId} ${band}`;
    const before = this.averages.get(key);
    this.averages.set(key, before === undefined ? completionTokens : before + (completionTokens - before) / 8);
    if (this.averages.size > this.kept) this.averages.delete(this.averages.keys().next().value!);
  }
}
