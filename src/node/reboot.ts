import { RunbookError } from '../errors.js';
import { quote } from './transport/quote.js';
import type { Transport } from './transport/types.js';

// A reboot as the node itself tells it: a new boot is a new kernel boot_id or a new start of PID 1 (a container node,
// kind's or the test bed's, keeps the host's kernel and boot_id across its restart; its PID 1 starts again).

/** "boot_id/PID 1's start time in clock ticks since boot" (field 22 of /proc/1/stat, counted after the command name). */
export const BOOT_IDENTITY_SCRIPT = `printf '%s/%s\\n' "$(cat /proc/sys/kernel/random/boot_id)" "$(sed 's/^.*) //' /proc/1/stat | cut -d' ' -f20)"`;

/** kured's sentinel, written by Debian's and Ubuntu's packages (unattended-upgrades) when a reboot is due. */
export const DEFAULT_REBOOT_SENTINEL = '/var/run/reboot-required';

export function parseBootIdentity(out: string): string {
  const id = out.trim();
  if (!/^[0-9a-f-]{36}\/\d+$/.test(id)) throw new RunbookError('internal', `unreadable boot identity from the node: ${JSON.stringify(id.slice(0, 100))}`);
  return id;
}

/** What the script prints, starting with the node's boot identity. */
async function readBoot(transport: Transport, script: string): Promise<string> {
  const r = await transport.exec(script, { timeoutMs: 15_000 });
  if (r.code !== 0) throw new RunbookError('unreachable', `${transport.target}: could not read its boot identity (${r.stderr.trim() || `exit ${r.code}`})`);
  return r.stdout;
}

/** The node's boot identity now. */
export const bootIdentity = async (transport: Transport): Promise<string> => parseBootIdentity(await readBoot(transport, BOOT_IDENTITY_SCRIPT));

/** Prints "required" (then the packages Debian lists in reboot-required.pkgs) when the node wants a reboot. */
export function rebootRequiredScript(sentinelCommand?: string): string {
  return sentinelCommand
    ? `if ( ${sentinelCommand} ) >/dev/null 2>&1; then echo required; fi`
    : `if [ -e ${DEFAULT_REBOOT_SENTINEL} ]; then echo required; [ ! -r ${DEFAULT_REBOOT_SENTINEL}.pkgs ] || tr '\\n' ' ' < ${DEFAULT_REBOOT_SENTINEL}.pkgs; fi`;
}

/** Why the node wants a reboot, from rebootRequiredScript's output; undefined when it does not. */
export function parseRebootRequired(out: string, sentinelCommand?: string): string | undefined {
  const [first, ...rest] = out.trim().split('\n');
  if (first !== 'required') return undefined;
  if (sentinelCommand) return `the sentinel command exited 0 (${sentinelCommand})`;
  const pkgs = rest.join(' ').trim();
  return `${DEFAULT_REBOOT_SENTINEL} is there${pkgs ? ` (for ${pkgs})` : ''}`;
}

/** Why the node wants a reboot (the sentinel file, or the operator's command exiting 0), or undefined when it does not. */
export async function rebootRequired(transport: Transport, sentinelCommand?: string): Promise<string | undefined> {
  const r = await transport.exec(rebootRequiredScript(sentinelCommand), { timeoutMs: 60_000 });
  if (r.code !== 0) throw new RunbookError('internal', `${transport.target}: could not tell whether a reboot is required (${r.stderr.trim() || `exit ${r.code}`})`);
  return parseRebootRequired(r.stdout, sentinelCommand);
}

/** Where the reboot command's exit status and output go: /run, so a reboot removes them and only a failure stays. */
export const rebootOutcomeFile = (runId: string) => `/run/node-maint-reboot-${runId.replace(/[^0-9a-zA-Z-]/g, '')}`;

/**
 * Starts the reboot detached from the command that asks for it, a moment later, so the command can answer first; its
 * exit status and output are written beside each other for the wait to read (a reboot command that fails is said at
 * once, not after --reboot-timeout).
 */
export const rebootScript = (command: string, outcome: string) =>
  `rm -f ${outcome}.status ${outcome}.out; setsid sh -c ${quote(`sleep 2; ( ${command} ) >${outcome}.out 2>&1; echo $? >${outcome}.status`)} </dev/null >/dev/null 2>&1 &`;

/** The reboot command ended, and not in a reboot: its exit status was not 0. */
export class RebootCommandFailed extends Error {}

/**
 * The node's boot identity now; on the boot the reboot was asked from, also the reboot command's outcome: a command
 * that exited non-zero throws RebootCommandFailed (exit 0 is a reboot on its way).
 */
export async function bootAfterRebootCommand(transport: Transport, before: string, outcome: string, command: string): Promise<string> {
  const out = await readBoot(transport, `${BOOT_IDENTITY_SCRIPT}; printf 'status=%s\\n' "$(cat ${outcome}.status 2>/dev/null)"; tail -c 600 ${outcome}.out 2>/dev/null || true`);
  const [first = '', statusLine = '', ...output] = out.split('\n');
  const boot = parseBootIdentity(first);
  // No status yet: the command is still at work (or the reboot is on its way); 0: it asked for the reboot.
  const status = /^status=([1-9]\d*)$/.exec(statusLine.trim())?.[1];
  if (boot === before && status) {
    const said = output.join('\n').trim();
    throw new RebootCommandFailed(`the reboot command exited ${status} and the node did not reboot: ${command}${said ? `: ${said}` : ''}`);
  }
  return boot;
}

/** How a boot identity is shown: the start of its boot_id and PID 1's start. */
export const shortBoot = (id: string) => `${id.slice(0, 8)}/${id.split('/')[1] ?? ''}`;
