import {
  getMetricsFromIterator,
  type PromData,
  type PromHistogramData,
  type PromMetric,
  type PromMetrics,
} from 'prom2javascript';

/**
 * A scrape of a Prometheus endpoint, parsed with a text-format parser
 * (prom2javascript: it keeps each labelled histogram series apart), with
 * look-ups by name and exact labels.
 */
export class Scrape {
  private constructor(
    readonly text: string,
    readonly metrics: PromMetrics,
  ) {}

  static async parse(text: string): Promise<Scrape> {
    // prom-client writes NaN as `Nan` (Node's event-loop lag before its first sample), which
    // Prometheus reads but this parser refuses: those samples are left out, everything else is
    // parsed as it came.
    const lines = text.split('\n').filter((line) => !line.endsWith(' Nan'));
    return new Scrape(text, await getMetricsFromIterator(lines[Symbol.iterator]()));
  }

  /** The family, which must be there. */
  family(name: string): PromMetric {
    const family = this.metrics[name];
    if (!family) throw new Error(`no metric ${name} in the scrape`);
    return family;
  }

  /** Every series of a family (none when it is not there). */
  series(name: string): Array<PromData | PromHistogramData> {
    return (this.metrics[name]?.data ?? []) as Array<PromData | PromHistogramData>;
  }

  /** The series whose labels are exactly `labels`, or undefined. */
  sample(name: string, labels: Record<string, string> = {}): (PromData & Partial<PromHistogramData>) | undefined {
    return this.series(name).find((series) => sameLabels(series.labels ?? {}, labels)) as
      (PromData & Partial<PromHistogramData>) | undefined;
  }

  /**
   * A counter's or gauge's value (0 when the series is not there yet: a counter not yet
   * incremented).
   */
  value(name: string, labels: Record<string, string> = {}): number {
    return this.sample(name, labels)?.value ?? 0;
  }

  /** A histogram's observation count for exactly these labels (0 when none yet). */
  count(name: string, labels: Record<string, string> = {}): number {
    return this.sample(name, labels)?.count ?? 0;
  }
}

function sameLabels(a: Record<string, string>, b: Record<string, string>): boolean {
  const keys = Object.keys(a);
  return keys.length === Object.keys(b).length && keys.every((key) => a[key] === b[key]);
}

/**
 * GETs and parses a metrics endpoint; with the operator token when given.
 *
 * @example
 * const before = await scrape(`${gateway.url}/metrics`, 'operator-token');
 */
export async function scrape(url: string, token?: string): Promise<Scrape> {
  const response = await fetch(url, { headers: token ? { authorization: `Bearer ${token}` } : {} });
  if (response.status !== 200) throw new Error(`GET ${url}: ${response.status} ${await response.text()}`);
  return Scrape.parse(await response.text());
}
