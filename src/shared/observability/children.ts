/**
 * A metric's children by label values, made once and then found by nested
 * Map lookups: prom-client's `labels(...)` builds a label object each call,
 * which the request path should not pay for on every request.
 *
 * @example
 * const byRoute = new Children((route: string, model: string) => histogram.labels(route, model));
 * byRoute.get('/v1/embeddings', 'sim-embed').observe(0.004);
 */
export class Children<
  T,
  K1 extends string | number,
  K2 extends string | number = string,
  K3 extends string | number = string,
  K4 extends string | number = string,
> {
  private readonly root = new Map<K1, Map<K2, Map<K3, Map<K4, T>>>>();

  constructor(private readonly make: (a: K1, b: K2, c: K3, d: K4) => T) {}

  get(a: K1, b: K2 = '' as K2, c: K3 = '' as K3, d: K4 = '' as K4): T {
    let level1 = this.root.get(a);
    if (!level1) this.root.set(a, (level1 = new Map<K2, Map<K3, Map<K4, T>>>()));
    let level2 = level1.get(b);
    if (!level2) level1.set(b, (level2 = new Map<K3, Map<K4, T>>()));
    let level3 = level2.get(c);
    if (!level3) level2.set(c, (level3 = new Map<K4, T>()));
    let child = level3.get(d);
    if (child === undefined) level3.set(d, (child = this.make(a, b, c, d)));
    return child;
  }
}
