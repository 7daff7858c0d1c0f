import type { Step } from '../runbook/step.js';
import { clearState } from './clear-state.js';
import { cordon, uncordon } from './cordon.js';
import { drain } from './drain.js';
import { startKubelet, stopKubelet } from './kubelet.js';
import { preflight } from './preflight.js';
import { teardownSandboxes } from './teardown-sandboxes.js';
import { upgradeRuntime } from './upgrade-runtime.js';
import { verifyNode } from './verify.js';

/** The runbook, in order. */
export const STEPS: Step<any>[] = [
  preflight,
  cordon,
  drain,
  stopKubelet,
  teardownSandboxes,
  clearState,
  upgradeRuntime,
  startKubelet,
  uncordon,
  verifyNode,
];

export { preflight };
