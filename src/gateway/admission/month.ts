/**
 * A calendar month or day (UTC): its name (`YYYY-MM`, `YYYY-MM-DD`), and when it starts and ends
 * (ms).
 */
export interface CalendarWindow {
  name: string;
  startsAt: number;
  endsAt: number;
}

/** `YYYY-MM` of now, in UTC. */
export function currentMonth(): string {
  return currentMonthBounds().name;
}

/** The month (UTC) of `now`: its `YYYY-MM`, and when it starts and ends (ms). */
export function currentMonthBounds(now = Date.now()): CalendarWindow {
  const date = new Date(now);
  return {
    name: date.toISOString().slice(0, 7),
    startsAt: Date.UTC(date.getUTCFullYear(), date.getUTCMonth(), 1),
    endsAt: Date.UTC(date.getUTCFullYear(), date.getUTCMonth() + 1, 1),
  };
}

/** The day (UTC) of `now`: its `YYYY-MM-DD`, and when it starts and ends (ms). */
export function currentDayBounds(now = Date.now()): CalendarWindow {
  const date = new Date(now);
  const startsAt = Date.UTC(date.getUTCFullYear(), date.getUTCMonth(), date.getUTCDate());
  return { name: date.toISOString().slice(0, 10), startsAt, endsAt: startsAt + 86_400_000 };
}

/**
 * The month and the day a request's tokens and budgets count in, worked out again only once the
 * clock passes their end: working them out costs about 10 k instructions each (callgrind), three a
 * request. The gate keeper's (`GateKeeper`, made in services.ts); two windows kept, no key.
 */
export class Calendar {
  private month: CalendarWindow = { name: '', startsAt: 0, endsAt: 0 };
  private day: CalendarWindow = { name: '', startsAt: 0, endsAt: 0 };

  monthOf(now: number): CalendarWindow {
    if (now < this.month.startsAt || now >= this.month.endsAt) this.month = currentMonthBounds(now);
    return this.month;
  }

  dayOf(now: number): CalendarWindow {
    if (now < this.day.startsAt || now >= this.day.endsAt) this.day = currentDayBounds(now);
    return this.day;
  }
}

export function monthStart(month: string): Date {
  return new Date(`${month}-01T00:00:00Z`);
}
