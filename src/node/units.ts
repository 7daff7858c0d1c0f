import { command } from './transport/quote.js';

// Service control through systemctl (systemd, or the test bed's stand-in): one script per batch of units.

/** The socket units that start a service on demand (docker.socket for docker): a client would restart it mid-upgrade. */
const triggerSockets = (u: string) =>
  `systemctl show -p TriggeredBy ${command(u)} 2>/dev/null | sed -n 's/^TriggeredBy=//p' | tr ' ' '\\n' | grep -E '^[A-Za-z0-9@._-]+\\.socket$'`;

/** Stops each unit, its activating sockets first, so that no client (a state read's `docker info`) revives it. */
export function stopUnitsScript(units: string[]): string {
  return units.map((u) => `{ for s in $(${triggerSockets(u)}); do systemctl stop "$s" || exit 1; done; systemctl stop ${command(u)}; }`).join(' && ');
}

/** Starts each unit, then its activating sockets that are enabled (those the stop took down, and only those). */
export function startUnitsScript(units: string[]): string {
  return units
    .map((u) => `systemctl start ${command(u)} && for s in $(${triggerSockets(u)}); do [ "$(systemctl is-enabled "$s" 2>/dev/null)" != enabled ] || systemctl start "$s" || exit 1; done`)
    .join(' && ');
}

/** Prints "unit active|inactive" per unit. */
export function unitStatesScript(units: string[]): string {
  return units.map((u) => `printf '%s %s\\n' ${command(u)} "$(systemctl is-active ${command(u)} 2>/dev/null || true)"`).join('; ');
}

export function parseUnitStates(text: string): Map<string, boolean> {
  const states = new Map<string, boolean>();
  for (const line of text.split('\n')) {
    const [unit, state] = line.trim().split(/\s+/);
    if (unit) states.set(unit, state === 'active');
  }
  return states;
}

/**
 * What a unit is doing: running, starting (activating, or a start job queued), stopping, stopped, or unknown
 * (systemctl did not answer: never taken as stopped).
 */
export type UnitRun = 'running' | 'starting' | 'stopping' | 'stopped' | 'unknown';

/**
 * Prints "unit ActiveState JobId" per unit. A unit can be "inactive" to is-active while a start job waits for it
 * (the boot's, behind the runtime it comes after): systemd starts it later unless a stop replaces that job.
 */
export function unitRunsScript(units: string[]): string {
  const show = (u: string, p: string) => `$(systemctl show -p ${p} --value ${command(u)} 2>/dev/null || true)`;
  return units.map((u) => `printf '%s %s %s\\n' ${command(u)} "${show(u, 'ActiveState')}" "${show(u, 'Job')}"`).join('; ');
}

export function parseUnitRuns(text: string): Map<string, UnitRun> {
  const runs = new Map<string, UnitRun>();
  for (const line of text.split('\n')) {
    const [unit, state = '', job = ''] = line.trim().split(/\s+/);
    if (!unit) continue;
    if (state === 'active' || state === 'reloading') runs.set(unit, 'running');
    else if (state === 'activating' || job !== '') runs.set(unit, 'starting');
    else if (state === 'deactivating') runs.set(unit, 'stopping');
    else if (state === 'inactive' || state === 'failed') runs.set(unit, 'stopped');
    else runs.set(unit, 'unknown');
  }
  return runs;
}
