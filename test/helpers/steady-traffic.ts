/**
 * Steady traffic from several tenants through one gateway, each request's status and times kept:
 * for tests of what clients see while something happens underneath (a Redis flushed, restarted).
 * Each tenant runs `concurrency` loops of one chat completion after another until `stop` says so;
 * `pauseAfter` successes, its loops wait for `resume`.
 */

export interface Outcome {
  tenant: string;
  /** When the request was sent and answered, ms on `performance.now()`'s clock. */
  start: number;
  end: number;
  status: number;
  /** The error's code, for a refusal. */
  code?: string;
}

export interface TrafficTenant {
  name: string;
  secret: string;
  concurrency: number;
  /** Successes after which its loops wait for `resume` (none: they never wait). */
  pauseAfter?: number;
}

export interface SteadyTraffic {
  outcomes: Outcome[];
  /** Successes of a tenant so far. */
  succeeded(tenant: string): number;
  /** Lets the paused tenants go on. */
  resume(): void;
  /** Stops every loop and resolves once each has ended. */
  stop(): Promise<void>;
}

export function steadyTraffic(baseURL: string, tenants: TrafficTenant[]): SteadyTraffic {
  const outcomes: Outcome[] = [];
  let stopped = false;
  let resume!: () => void;
  const resumed = new Promise<void>((resolve) => (resume = resolve));
  const succeeded = (tenant: string) => outcomes.filter((o) => o.tenant === tenant && o.status === 200).length;
  const send = async (tenant: TrafficTenant): Promise<void> => {
    const start = performance.now();
    const response = await fetch(`${baseURL}/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${tenant.secret}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        model: 'sim-chat',
        max_tokens: 2,
        ignore_eos: true,
        messages: [{ role: 'user', content: 'hi' }],
      }),
      signal: AbortSignal.timeout(10_000),
    });
    const text = await response.text();
    const code = response.status === 200 ? undefined : (JSON.parse(text) as { error?: { code?: string } }).error?.code;
    outcomes.push({ tenant: tenant.name, start, end: performance.now(), status: response.status, code });
  };
  const loop = async (tenant: TrafficTenant): Promise<void> => {
    while (!stopped) {
      if (tenant.pauseAfter !== undefined && succeeded(tenant.name) >= tenant.pauseAfter) await resumed;
      if (stopped) return;
      await send(tenant);
    }
  };
  const loops = tenants.flatMap((tenant) => Array.from({ length: tenant.concurrency }, () => loop(tenant)));
  return {
    outcomes,
    succeeded,
    resume,
    async stop() {
      stopped = true;
      resume();
      await Promise.all(loops);
    },
  };
}

/**
 * A request refused for no limit of its tenant's: the gate could not answer (503), or a rate limit
 * it did not pass.
 */
export function refusedForNothing(outcome: Outcome): boolean {
  return outcome.status === 503 || (outcome.status === 429 && outcome.code !== 'budget_exceeded');
}

/**
 * Per tenant, the longest run of consecutive requests refused for nothing (`refusedForNothing`),
 * from the first's sending to the last's answer; and how many such refusals there were in all.
 */
export function refusalSpans(outcomes: Outcome[]): {
  longestMs: number;
  refused: number;
  byTenant: Record<string, number>;
} {
  const byTenant: Record<string, number> = {};
  let refused = 0;
  const tenants = new Set(outcomes.map((o) => o.tenant));
  for (const tenant of tenants) {
    const own = outcomes.filter((o) => o.tenant === tenant).sort((a, b) => a.start - b.start);
    let longest = 0;
    let first: Outcome | null = null;
    let lastEnd = 0;
    for (const outcome of own) {
      if (refusedForNothing(outcome)) {
        refused++;
        first ??= outcome;
        lastEnd = Math.max(lastEnd, outcome.end);
        longest = Math.max(longest, lastEnd - first.start);
      } else if (outcome.status === 200) {
        first = null;
        lastEnd = 0;
      }
    }
    byTenant[tenant] = Math.round(longest);
  }
  return { longestMs: Math.max(0, ...Object.values(byTenant)), refused, byTenant };
}
