/** The calendar month a request's tokens count in (`GateKeeper`), kept between requests. */

/** The current month, and the times (ms) it starts and ends: kept, since formatting a date every request showed in the profile. */
let month = { name: '', startsAt: 0, endsAt: 0 };

/** `YYYY-MM` of now, in UTC. */
export function currentMonth(): string {
  return currentMonthBounds().name;
}

/** The current month (UTC): its `YYYY-MM`, and when it starts and ends (ms). */
export function currentMonthBounds(): { name: string; startsAt: number; endsAt: number } {
  const now = Date.now();
  if (now < month.startsAt || now >= month.endsAt) {
    const date = new Date(now);
    month = {
      name: date.toISOString().slice(0, 7),
      startsAt: Date.UTC(date.getUTCFullYear(), date.getUTCMonth(), 1),
      endsAt: Date.UTC(date.getUTCFullYear(), date.getUTCMonth() + 1, 1),
    };
  }
  return month;
}

export function monthStart(month: string): Date {
  return new Date(`${month}-01T00:00:00Z`);
}
