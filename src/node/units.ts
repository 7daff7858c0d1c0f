import { command } from './transport/quote.js';

// Service control through systemctl (systemd, or the test bed's stand-in): one script per batch of units.
export function stopUnitsScript(units: string[]): string {
  return units.map((u) => `systemctl stop ${command(u)}`).join(' && ');
}

export function startUnitsScript(units: string[]): string {
  return units.map((u) => `systemctl start ${command(u)}`).join(' && ');
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
