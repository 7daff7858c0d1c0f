// client-node's KubeConfig alone. `npm run build` bundles this module with what it imports into one file: loading
// client-node's ~1,000 modules cost each runbook process 1.3 CPU-seconds (measured; bundled: 0.25).
export { KubeConfig } from '@kubernetes/client-node';
