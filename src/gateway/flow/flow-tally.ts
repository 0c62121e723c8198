/** Tokens served to one organization since the gateway started. */
export interface Served {
  promptTokens: number;
  completionTokens: number;
}

/**
 * Flow control's counts over every model: the requests waiting per organization and in all (what
 * its queue bounds are checked against), and the tokens each organization was served (what the
 * operator's page shows). Organizations served are bounded: more are forgotten oldest first.
 */
export class FlowTally {
  private readonly waitingPerOrg = new Map<string, number>();
  private waitingTotal = 0;
  readonly served = new Map<string, Served>();

  constructor(private readonly orgsKept = 10_000) {}

  /** Requests waiting in all, or one organization's. */
  waiting(orgId?: string): number {
    return orgId === undefined ? this.waitingTotal : (this.waitingPerOrg.get(orgId) ?? 0);
  }

  /** Counts requests of the organization that started (1) or stopped (-1) waiting. */
  waited(orgId: string, change: number): void {
    this.waitingTotal += change;
    const now = (this.waitingPerOrg.get(orgId) ?? 0) + change;
    if (now <= 0) this.waitingPerOrg.delete(orgId);
    else this.waitingPerOrg.set(orgId, now);
  }

  serve(orgId: string, used: Served): void {
    const total = this.served.get(orgId) ?? { promptTokens: 0, completionTokens: 0 };
    total.promptTokens += used.promptTokens;
    total.completionTokens += used.completionTokens;
    this.served.set(orgId, total);
    if (this.served.size > this.orgsKept) this.served.delete(this.served.keys().next().value!);
  }
}
