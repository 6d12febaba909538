import { Type } from 'typebox';

export const DAY_MS = 86_400_000;

/** Spec 8: `window_days` is an integer from 1 to 365, 30 by default (analytics and the usage report). */
export const LONGEST_WINDOW_DAYS = 365;
export const WindowDays = Type.Integer({ minimum: 1, maximum: LONGEST_WINDOW_DAYS, default: 30 });

/**
 * The first moment of a window of `windowDays` UTC days ending with today (today included), the
 * window analytics and the usage report count queries in.
 */
export function utcDayWindowStart(windowDays: number, now = new Date()): Date {
  return new Date(Math.floor(now.getTime() / DAY_MS) * DAY_MS - (windowDays - 1) * DAY_MS);
}

/** A moment's UTC day, YYYY-MM-DD. */
export function utcDay(moment: Date): string {
  return moment.toISOString().slice(0, 10);
}
