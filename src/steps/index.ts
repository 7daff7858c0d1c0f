import type { Step } from '../runbook/step.js';
import { clearState } from './clear-state.js';
import { cordon, uncordon } from './cordon.js';
import { drain } from './drain.js';
import { startKubelet, stopKubelet } from './kubelet.js';
import { preflight } from './preflight.js';
import { proveNode } from './prove-node.js';
import { rebootNode } from './reboot.js';
import { teardownSandboxes } from './teardown-sandboxes.js';
import { upgradeRuntime } from './upgrade-runtime.js';
import { verifyNode } from './verify.js';

/**
 * The runbook, in order: the only place the order is written. uncordon is the point of no return: a failure before
 * it rolls back, newest first; after it, nothing is downgraded.
 */
export const STEPS: readonly Step<any>[] = [
  preflight,
  cordon,
  drain,
  stopKubelet,
  teardownSandboxes,
  clearState,
  upgradeRuntime,
  rebootNode,
  startKubelet,
  proveNode,
  uncordon,
  verifyNode,
];
