import type { Cluster } from '../cluster/api.js';
import { RunbookError } from '../errors.js';

// The credentials of a run the agent starts: a token of the runs' own ServiceAccount (node-maint/node-maint-run in
// runbooks/agent/), bound to this node (it dies with the Node object and carries the node's name, which the admission
// policy holds each run to), valid as long as the run may go on without its agent, renewed by the agent while it
// follows the run, and its expiry read back (a cluster may cap what is asked).

/** The runs' account (runbooks/agent/rbac.yaml). */
export const RUN_ACCOUNT = { namespace: 'node-maint', name: 'node-maint-run' } as const;
/** The most a token is asked for (the admission policy refuses longer). */
export const MAX_TOKEN_SECONDS = 6 * 3600;

export interface RunToken {
  token: string;
  expiresAt: Date;
}

/**
 * A token for the run, bound to `node`, for `seconds`: refused (nothing started) when the API server gives less than
 * the run may need without its agent (`needSeconds`), since the run would then lose the API mid-maintenance.
 */
export async function mintRunToken(cluster: Cluster, node: string, needSeconds: number, now = Date.now()): Promise<RunToken> {
  const seconds = Math.min(MAX_TOKEN_SECONDS, Math.max(3600, 2 * needSeconds));
  if (needSeconds > MAX_TOKEN_SECONDS) throw new RunbookError('usage', `the run may go ${needSeconds}s without its agent (its lock, install, reboot and ready timeouts), longer than the ${MAX_TOKEN_SECONDS}s a run's token may live: lower them`);
  const t = await cluster.requestToken(RUN_ACCOUNT.namespace, RUN_ACCOUNT.name, { seconds, node });
  const gotSeconds = Math.floor((t.expiresAt.getTime() - now) / 1000);
  if (gotSeconds < needSeconds) throw new RunbookError('preflight', `the API server gave the run's token ${gotSeconds}s (asked ${seconds}s), less than the ${needSeconds}s the run may go without its agent: its --service-account-max-token-expiration is below what a run needs; nothing was started`);
  return t;
}

/** A token is renewed once half its life is gone (the agent follows the run every few seconds while it is up). */
export const renewalDue = (t: { expiresAt: Date; mintedAt: Date }, now = Date.now()) => now >= t.mintedAt.getTime() + (t.expiresAt.getTime() - t.mintedAt.getTime()) / 2;
