import { usageError } from '../errors.js';

/** kubectl-style durations: "90", "90s", "5m", "1h30m". Seconds. */
export function parseDuration(text: string, flag: string): number {
  if (/^\d+$/.test(text)) return Number(text);
  const m = /^(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?$/.exec(text);
  if (!m || text === '') throw usageError(`invalid ${flag} ${JSON.stringify(text)}: expected a duration such as 300s, 5m or 1h`);
  return Number(m[1] ?? 0) * 3600 + Number(m[2] ?? 0) * 60 + Number(m[3] ?? 0);
}

export function parseInteger(text: string, flag: string): number {
  if (!/^-?\d+$/.test(text)) throw usageError(`invalid ${flag} ${JSON.stringify(text)}: expected a whole number`);
  return Number(text);
}
