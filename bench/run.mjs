// npm run bench: every benchmark, one after another, each printing its figures and writing them into its section of
// docs/benchmarks.md (bench/record.mjs).
import { spawnSync } from 'node:child_process';

const r = spawnSync(process.execPath, ['bench/record.mjs', 'audit-node', 'fleet-preview', 'drain', 'scale', 'agents-idle'], { stdio: 'inherit' });
process.exitCode = r.status ?? 1;
