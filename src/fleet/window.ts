import { CronExpressionParser } from 'cron-parser';

// The maintenance window: a node starts only while it is open. Pure: the clock is an argument.
export interface MaintenanceWindow {
  /** A 5-field cron expression: when each window opens. */
  schedule: string;
  durationMinutes: number;
  /** IANA zone the schedule is read in. */
  timeZone: string;
}

export type WindowVerdict =
  | { inside: true; openedAt: string; closesAt: string }
  | { inside: false; nextOpensAt: string };

/** Minutes in "4h", "90m" or "1h30m"; undefined for anything else, zero included. */
export function parseDuration(text: string): number | undefined {
  const match = /^(?:(\d+)h)?(?:(\d+)m)?$/.exec(text);
  if (!match || text === '') return undefined;
  const minutes = Number(match[1] ?? 0) * 60 + Number(match[2] ?? 0);
  return minutes > 0 ? minutes : undefined;
}

export function formatDuration(minutes: number): string {
  const h = Math.floor(minutes / 60);
  const m = minutes % 60;
  return `${h ? `${h}h` : ''}${m ? `${m}m` : ''}`;
}

/** Throws a RangeError naming the zone when the runtime does not know it. */
export function checkTimeZone(timeZone: string): void {
  new Intl.DateTimeFormat(undefined, { timeZone });
}

/** Throws an Error saying what is wrong with the schedule. */
export function checkSchedule(schedule: string, timeZone: string): void {
  // cron-parser also takes 6 fields (seconds) and fills in missing ones; a window is set in minutes.
  const fields = schedule.trim().split(/\s+/).filter(Boolean);
  if (fields.length !== 5) throw new Error(`must be a 5-field cron expression (minute hour day-of-month month day-of-week), got ${fields.length} fields`);
  // Some expressions fail only when an occurrence is looked for.
  CronExpressionParser.parse(schedule, { tz: timeZone }).next();
}

/** Inside when the latest opening at or before `now`, plus the duration, is after `now`. */
export function windowAt(window: MaintenanceWindow, now: Date): WindowVerdict {
  // prev() is strictly before its current date: one millisecond on makes an opening at `now` count.
  const opened = CronExpressionParser.parse(window.schedule, { currentDate: new Date(now.getTime() + 1), tz: window.timeZone }).prev().toDate();
  const closes = new Date(opened.getTime() + window.durationMinutes * 60_000);
  if (closes > now) return { inside: true, openedAt: opened.toISOString(), closesAt: closes.toISOString() };
  const next = CronExpressionParser.parse(window.schedule, { currentDate: now, tz: window.timeZone }).next().toDate();
  return { inside: false, nextOpensAt: next.toISOString() };
}

/** "2025-01-11 22:00 Europe/Berlin": the time as the operator set the schedule. */
export function localTime(iso: string, timeZone: string): string {
  const parts = Object.fromEntries(
    new Intl.DateTimeFormat('en-US', { timeZone, year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit', hourCycle: 'h23' })
      .formatToParts(new Date(iso))
      .map((p) => [p.type, p.value]),
  );
  return `${parts.year}-${parts.month}-${parts.day} ${parts.hour}:${parts.minute} ${timeZone}`;
}

export function describeWindow(window: MaintenanceWindow): string {
  return `maintenance window "${window.schedule}" for ${formatDuration(window.durationMinutes)} (${window.timeZone})`;
}

/** Why a node may not start now, or undefined when the window is open. */
export function windowHold(window: MaintenanceWindow, now: Date): string | undefined {
  const verdict = windowAt(window, now);
  if (verdict.inside) return undefined;
  return `outside the ${describeWindow(window)}; it opens next at ${verdict.nextOpensAt} (${localTime(verdict.nextOpensAt, window.timeZone)}): run \`pulumi up\` again then`;
}
