import type { FleetConfig } from './config/index.js';

/**
 * How long one node's resource may take, in minutes: an hour for the runbook itself, plus every wait the config adds
 * (alerts holding it, a blocking pod, the reboot, its workloads back, the soak), so that Pulumi never gives up on a
 * node that is only waiting as it was told to.
 */
export function nodeTimeoutMinutes(config: Pick<FleetConfig, 'gates' | 'reboot' | 'blockingPods'>): number {
  const g = config.gates;
  const reboot = config.reboot.policy === 'never' ? 0 : config.reboot.timeoutSeconds;
  const waits = (g.alerts?.holdTimeoutSeconds ?? 0) + (config.blockingPods?.timeoutSeconds ?? 0) + reboot + g.workloadsTimeoutSeconds + g.soakSeconds;
  return 60 + Math.ceil(waits / 60);
}
