import type { ServiceState } from './state/types.js';

// `systemctl show -p LoadState,ActiveState,MainPID,ExecStart UNIT` output (systemd, or the test bed's stand-in).
export function parseSystemctlShow(unit: string, text: string): ServiceState {
  const props = new Map<string, string>();
  for (const line of text.split('\n')) {
    const eq = line.indexOf('=');
    if (eq > 0) props.set(line.slice(0, eq), line.slice(eq + 1));
  }
  const execStart = /argv\[\]=(.*?) ;/.exec(props.get('ExecStart') ?? '')?.[1] ?? '';
  return {
    unit,
    loaded: props.get('LoadState') === 'loaded',
    active: props.get('ActiveState') === 'active',
    mainPid: Number(props.get('MainPID') ?? 0) || 0,
    execStart,
  };
}
