import type { UsageWindow } from './window.js';

/** One day's value of a chart: `date` as `YYYY-MM-DD` (UTC). */
export interface DayValue {
  date: string;
  value: bigint;
}

const DAY_MS = 86_400_000;
const WIDTH = 600;
const HEIGHT = 150;

/** Every UTC day of the window, `YYYY-MM-DD`, in order. */
export function windowDays(window: UsageWindow): string[] {
  const dates: string[] = [];
  for (let at = window.from.getTime(); at < window.to.getTime(); at += DAY_MS)
    dates.push(new Date(at).toISOString().slice(0, 10));
  return dates;
}

/**
 * Bars by day, every day of the window (days without a value are empty),
 * drawn on the server as SVG: no script. The axes' labels are HTML beside
 * the drawing, so they keep their size on a narrow screen while the bars
 * stretch; each bar names its day and value on hover (`<title>`), and the
 * caption says what the chart shows.
 */
export function DayChart({
  title,
  caption,
  window,
  days,
  format,
}: {
  title: string;
  caption: string;
  window: UsageWindow;
  days: DayValue[];
  format: (v: bigint) => string;
}) {
  const byDate = new Map(days.map((d) => [d.date, d.value]));
  const dates = windowDays(window);
  // Exact (bigint) values; only the bars' heights are fractions.
  const values = dates.map((date) => byDate.get(date) ?? 0n);
  const max = values.reduce((a, b) => (b > a ? b : a), 0n);
  const slot = WIDTH / Math.max(1, dates.length);
  const used = values.filter((v) => v !== 0n).length;
  const summary =
    max === 0n
      ? `${title}: none in this window.`
      : `${title}: ${used} ${used === 1 ? 'day' : 'days'} with some, highest ${format(max)}.`;
  const heightOf = (v: bigint) => (max === 0n ? 0 : Math.max(1, (Number((v * 1000n) / max) / 1000) * (HEIGHT - 4)));
  return (
    <figure class="panel chart">
      <figcaption>
        <strong>{title}</strong> <span class="muted">{caption}</span>
      </figcaption>
      <div class="chart-plot">
        <div class="chart-y" aria-hidden="true">
          <span>{format(max)}</span>
          <span>{format(max / 2n)}</span>
          <span>{format(0n)}</span>
        </div>
        <svg viewBox={`0 0 ${WIDTH} ${HEIGHT}`} role="img" aria-label={summary} preserveAspectRatio="none">
          {[0.5, HEIGHT / 2, HEIGHT - 0.5].map((y) => (
            <line
              x1="0"
              y1={String(y)}
              x2={String(WIDTH)}
              y2={String(y)}
              stroke={y === HEIGHT - 0.5 ? '#5b6475' : '#d9dee7'}
              stroke-width="1"
              vector-effect="non-scaling-stroke"
            />
          ))}
          {values.map((v, index) =>
            v === 0n ? null : (
              <g class="bar">
                <title>{`${dates[index]}: ${format(v)}`}</title>
                <rect x={String(index * slot)} y="0" width={String(slot)} height={String(HEIGHT)} fill="transparent" />
                <rect
                  x={String(index * slot + slot * 0.15)}
                  y={String(HEIGHT - heightOf(v))}
                  width={String(slot * 0.7)}
                  height={String(heightOf(v))}
                  fill="#1f5fbf"
                />
              </g>
            ),
          )}
        </svg>
        <p class="chart-x muted" aria-hidden="true">
          <span>{dates[0]}</span>
          <span>{dates[Math.floor((dates.length - 1) / 2)]}</span>
          <span>{dates.at(-1)}</span>
        </p>
      </div>
    </figure>
  );
}
