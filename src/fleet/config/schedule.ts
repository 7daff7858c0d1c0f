import { validateNodeName } from '../../runbook/options.js';
import type { FleetOrder } from '../order.js';
import { UNDRAINABLE_BEHAVIORS, type UndrainableBehavior } from '../undrainable.js';
import { checkSchedule, checkTimeZone, parseDuration, type MaintenanceWindow } from '../window.js';
import { closest, ConfigError, isRecord, only } from './values.js';

// The keys that decide when nodes start, in which order, and what an undrainable node does to the fleet.
export function maintenanceWindow(value: unknown): MaintenanceWindow | undefined {
  if (value === undefined) return undefined;
  const key = 'maintenanceWindow';
  if (!isRecord(value)) throw new ConfigError(key, 'must be an object: {"schedule": "0 22 * * 6", "duration": "4h", "timeZone": "Europe/Berlin"}');
  only(key, value, ['schedule', 'duration', 'timeZone']);
  const { schedule, duration, timeZone = 'UTC' } = value;
  if (typeof timeZone !== 'string') throw new ConfigError(`${key}.timeZone`, 'must be an IANA time zone name such as Europe/Berlin');
  try {
    checkTimeZone(timeZone);
  } catch {
    throw new ConfigError(`${key}.timeZone`, `unknown time zone ${JSON.stringify(timeZone)} (an IANA name such as Europe/Berlin, or UTC)`);
  }
  if (typeof schedule !== 'string') throw new ConfigError(`${key}.schedule`, 'required: a 5-field cron expression for when each window opens, e.g. "0 22 * * 6"');
  try {
    checkSchedule(schedule, timeZone);
  } catch (e) {
    throw new ConfigError(`${key}.schedule`, `${JSON.stringify(schedule)}: ${(e as Error).message}`);
  }
  const minutes = typeof duration === 'string' ? parseDuration(duration) : undefined;
  if (minutes === undefined) throw new ConfigError(`${key}.duration`, `must be a positive duration in hours and/or minutes such as "4h", "90m" or "1h30m" (got ${JSON.stringify(duration)})`);
  return { schedule, durationMinutes: minutes, timeZone };
}

const ORDERS = ['fewest-pods', 'as-listed'] as const;

export function fleetOrder(value: unknown): FleetOrder {
  if (value === undefined) return 'fewest-pods';
  if (typeof value === 'string') {
    if ((ORDERS as readonly string[]).includes(value)) return value as FleetOrder;
    const hint = closest(value, ORDERS);
    throw new ConfigError('order', `unknown order ${JSON.stringify(value)}${hint ? ` (did you mean ${hint}?)` : ''}; known: ${ORDERS.join(', ')}, or a list of node names to go first`);
  }
  if (!Array.isArray(value) || value.length === 0 || value.some((n) => typeof n !== 'string')) throw new ConfigError('order', `must be ${ORDERS.join(' or ')}, or a non-empty list of node names to go first`);
  const names = value as string[];
  for (const n of names) {
    try {
      validateNodeName(n);
    } catch (e) {
      throw new ConfigError('order', (e as Error).message);
    }
  }
  const twice = names.filter((n, i) => names.indexOf(n) !== i);
  if (twice.length > 0) throw new ConfigError('order', `lists ${[...new Set(twice)].join(', ')} more than once`);
  return { first: names };
}

export function undrainable(value: unknown): UndrainableBehavior {
  if (value === undefined) return 'stop';
  if (typeof value === 'string' && (UNDRAINABLE_BEHAVIORS as readonly string[]).includes(value)) return value as UndrainableBehavior;
  const hint = typeof value === 'string' ? closest(value, UNDRAINABLE_BEHAVIORS) : undefined;
  throw new ConfigError('undrainable', `unknown behaviour ${JSON.stringify(value)}${hint ? ` (did you mean ${hint}?)` : ''}; known: stop (roll the node back and stop the fleet, the default), skip (roll it back, mark it, go on with the others)`);
}
