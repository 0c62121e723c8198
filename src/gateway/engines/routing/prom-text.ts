/** One sample of a Prometheus text exposition: `name{labels} value`. */
export interface PromSample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/**
 * Parses the Prometheus text exposition format (0.0.4, what vLLM's
 * prometheus_client serves): `# HELP`/`# TYPE` comments skipped, label
 * values unescaped (`\\`, `\"`, `\n`), values as Go's ParseFloat reads them
 * (`NaN`, `+Inf`, `-Inf`, exponents), an optional timestamp ignored. A line
 * that does not parse is skipped rather than failing the scrape: one odd
 * metric must not hide a replica's load.
 *
 * A small parser rather than a package: prom-client writes the format but
 * does not read it, and prom2javascript (the tests' parser) refuses metric
 * names with a colon, which every vLLM metric has. The gateway needs a few
 * gauges and counters a scrape, and this format's sample lines are simple.
 *
 * @example
 * parsePromText('vllm:num_requests_waiting{engine="0",model_name="m"} 3.0\n'); // [{ name: 'vllm:num_requests_waiting', labels: { engine: '0', model_name: 'm' }, value: 3 }]
 */
export function parsePromText(text: string): PromSample[] {
  const samples: PromSample[] = [];
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) continue;
    const sample = parseLine(line);
    if (sample) samples.push(sample);
  }
  return samples;
}

const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*/;
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*/;

function parseLine(line: string): PromSample | null {
  const name = NAME.exec(line)?.[0];
  if (!name) return null;
  let at = name.length;
  const labels: Record<string, string> = {};
  if (line[at] === '{') {
    at++;
    for (;;) {
      while (line[at] === ' ' || line[at] === ',') at++;
      if (line[at] === '}') {
        at++;
        break;
      }
      const label = LABEL_NAME.exec(line.slice(at))?.[0];
      if (!label) return null;
      at += label.length;
      while (line[at] === ' ') at++;
      if (line[at] !== '=' || line[at + 1] !== '"') return null;
      at += 2;
      let value = '';
      for (; at < line.length && line[at] !== '"'; at++) {
        if (line[at] === '\\') {
          const next = line[++at];
          value += next === 'n' ? '\n' : (next ?? '');
        } else {
          value += line[at];
        }
      }
      if (line[at] !== '"') return null;
      at++;
      labels[label] = value;
    }
  }
  const [valueText] = line.slice(at).trim().split(/\s+/);
  const value = parseValue(valueText ?? '');
  return value === null ? null : { name, labels, value };
}

function parseValue(text: string): number | null {
  if (text === 'NaN') return NaN;
  if (text === '+Inf' || text === 'Inf') return Infinity;
  if (text === '-Inf') return -Infinity;
  if (text === '') return null;
  const value = Number(text);
  return Number.isNaN(value) ? null : value;
}
