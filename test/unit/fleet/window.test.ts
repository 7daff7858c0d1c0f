import { describe, expect, it } from 'vitest';
import { localTime, parseDuration, windowAt, windowHold, type MaintenanceWindow } from '../../../src/fleet/window.js';

// 2025-01-11 is a Saturday; Berlin is UTC+1 in January, New York UTC-4 in July.
const saturdayNightBerlin: MaintenanceWindow = { schedule: '0 22 * * 6', durationMinutes: 240, timeZone: 'Europe/Berlin' };
const at = (iso: string) => new Date(iso);

describe('the maintenance window', () => {
  it.each([
    // now, inside, opened or next opening
    ['2025-01-08T12:00:00Z', false, '2025-01-11T21:00:00.000Z'],
    ['2025-01-11T20:59:59Z', false, '2025-01-11T21:00:00.000Z'],
    ['2025-01-11T21:00:00Z', true, '2025-01-11T21:00:00.000Z'],
    // Past midnight in Berlin (and in UTC): the window opened on Saturday still holds.
    ['2025-01-12T00:59:59Z', true, '2025-01-11T21:00:00.000Z'],
    ['2025-01-12T01:00:00Z', false, '2025-01-18T21:00:00.000Z'],
  ])('Saturdays 22:00 Berlin for 4h, at %s: inside %s (%s)', (now, inside, when) => {
    const verdict = windowAt(saturdayNightBerlin, at(now));
    expect(verdict.inside).toBe(inside);
    expect(verdict.inside ? verdict.openedAt : verdict.nextOpensAt).toBe(when);
  });

  it('closes the duration after it opened', () => {
    expect(windowAt(saturdayNightBerlin, at('2025-01-11T23:00:00Z'))).toEqual({ inside: true, openedAt: '2025-01-11T21:00:00.000Z', closesAt: '2025-01-12T01:00:00.000Z' });
  });

  it('reads the schedule in its time zone', () => {
    const utc = { ...saturdayNightBerlin, timeZone: 'UTC' };
    expect(windowAt(utc, at('2025-01-11T21:30:00Z'))).toEqual({ inside: false, nextOpensAt: '2025-01-11T22:00:00.000Z' });
    expect(windowAt(saturdayNightBerlin, at('2025-01-11T21:30:00Z')).inside).toBe(true);
    const newYork: MaintenanceWindow = { schedule: '0 2 * * *', durationMinutes: 90, timeZone: 'America/New_York' };
    expect(windowAt(newYork, at('2025-07-10T06:30:00Z'))).toEqual({ inside: true, openedAt: '2025-07-10T06:00:00.000Z', closesAt: '2025-07-10T07:30:00.000Z' });
    expect(windowAt(newYork, at('2025-07-10T07:30:00Z'))).toEqual({ inside: false, nextOpensAt: '2025-07-11T06:00:00.000Z' });
  });

  it('crosses midnight: 23:30 for 1h30m holds until 01:00 the next day', () => {
    const nightly: MaintenanceWindow = { schedule: '30 23 * * *', durationMinutes: 90, timeZone: 'UTC' };
    expect(windowAt(nightly, at('2025-03-05T00:59:00Z'))).toMatchObject({ inside: true, openedAt: '2025-03-04T23:30:00.000Z' });
    expect(windowAt(nightly, at('2025-03-05T01:00:00Z'))).toEqual({ inside: false, nextOpensAt: '2025-03-05T23:30:00.000Z' });
  });

  it('is always open when it lasts longer than the time between openings', () => {
    const hourly: MaintenanceWindow = { schedule: '0 * * * *', durationMinutes: 120, timeZone: 'UTC' };
    for (const now of ['2025-03-05T00:00:00Z', '2025-03-05T00:59:59Z', '2025-03-05T13:17:00Z']) expect(windowAt(hourly, at(now)).inside).toBe(true);
  });

  it('says outside, and when it opens next in UTC and in its own zone', () => {
    expect(windowHold(saturdayNightBerlin, at('2025-01-08T12:00:00Z'))).toBe(
      'outside the maintenance window "0 22 * * 6" for 4h (Europe/Berlin); it opens next at 2025-01-11T21:00:00.000Z (2025-01-11 22:00 Europe/Berlin): run `pulumi up` again then',
    );
    expect(windowHold(saturdayNightBerlin, at('2025-01-11T22:00:00Z'))).toBeUndefined();
    expect(localTime('2025-07-10T06:00:00.000Z', 'America/New_York')).toBe('2025-07-10 02:00 America/New_York');
    expect(localTime('2025-07-10T00:05:00.000Z', 'UTC')).toBe('2025-07-10 00:05 UTC');
  });
});

describe('window durations', () => {
  it.each([
    ['4h', 240],
    ['90m', 90],
    ['1h30m', 90],
    ['0h5m', 5],
    ['0h', undefined],
    ['0m', undefined],
    ['', undefined],
    ['1.5h', undefined],
    ['4 h', undefined],
    ['30m1h', undefined],
    ['4d', undefined],
  ])('%j is %s minutes', (text, minutes) => {
    expect(parseDuration(text)).toBe(minutes);
  });
});
