import { parseDuration } from '../../cli/duration.js';

// What every key's parser shares: the namespace, the error that names its key, and the checks of shapes and spelling.
export const CONFIG_NAMESPACE = 'node-maint';

export class ConfigError extends Error {
  constructor(key: string, message: string) {
    super(`config ${CONFIG_NAMESPACE}:${key}: ${message}`);
    this.name = 'ConfigError';
  }
}

/** The candidate a typo most likely meant (edit distance up to 3), for "did you mean". */
export function closest(word: string, candidates: readonly string[]): string | undefined {
  const distance = (a: string, b: string) => {
    const d = Array.from({ length: a.length + 1 }, (_, i) => [i, ...Array(b.length).fill(0)]);
    for (let j = 1; j <= b.length; j++) d[0]![j] = j;
    for (let i = 1; i <= a.length; i++)
      for (let j = 1; j <= b.length; j++) d[i]![j] = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + (a[i - 1]!.toLowerCase() === b[j - 1]!.toLowerCase() ? 0 : 1));
    return d[a.length]![b.length]!;
  };
  const best = [...candidates].sort((x, y) => distance(word, x) - distance(word, y))[0];
  return best && distance(word, best) <= 3 ? best : undefined;
}

/** A value as `pulumi config` stores it: JSON for objects, lists, numbers and booleans; anything else is a string. */
export function parseValue(raw: string | undefined): unknown {
  if (raw === undefined) return undefined;
  try {
    return JSON.parse(raw);
  } catch {
    return raw;
  }
}

export const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

export function stringMap(key: string, value: unknown): Record<string, string> {
  if (value === undefined) return {};
  if (!isRecord(value) || Object.values(value).some((v) => typeof v !== 'string')) throw new ConfigError(key, 'must be a map of names to strings');
  return value as Record<string, string>;
}

/** Refuses settings the key does not have, naming the one most likely meant. */
export function only(key: string, value: Record<string, unknown>, allowed: string[]): void {
  for (const k of Object.keys(value)) {
    if (!allowed.includes(k)) {
      const hint = closest(k, allowed);
      throw new ConfigError(`${key}.${k}`, `unknown setting${hint ? ` (did you mean ${key}.${hint}?)` : ''}; known: ${allowed.join(', ')}`);
    }
  }
}

/** An object-valued key, or undefined when it is not set. */
export function objectOf(key: string, value: unknown, allowed: string[], example: string): Record<string, unknown> | undefined {
  if (value === undefined) return undefined;
  if (!isRecord(value)) throw new ConfigError(key, `must be an object, e.g. ${example}`);
  only(key, value, allowed);
  return value;
}

/** Seconds in "90s", "5m", "1h30m" (a plain number is seconds); `fallback` when not set. */
export function durationSeconds(key: string, value: unknown, fallback: number, { allowZero = false } = {}): number {
  if (value === undefined) return fallback;
  let seconds: number | undefined;
  try {
    seconds = typeof value === 'number' ? value : typeof value === 'string' ? parseDuration(value, key) : undefined;
  } catch {
    seconds = undefined;
  }
  if (seconds === undefined || !Number.isInteger(seconds) || seconds < 0 || (seconds === 0 && !allowZero)) {
    throw new ConfigError(key, `must be a ${allowZero ? '' : 'positive '}duration such as "30s", "5m" or "1h30m" (got ${JSON.stringify(value)})`);
  }
  return seconds;
}
