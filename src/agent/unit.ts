import { readFileSync } from 'node:fs';
import { auditNodeMain } from '../cli/audit-node.js';
import { upgradeNodeMain } from '../cli/upgrade-node.js';
import { requestFile } from './host.js';

// What the agent's unit runs on the host: one of the CLI's commands, with the arguments the agent built from the
// request's checked fields and wrote, root only, beside the run's output; its only argument is the run's id (hex).
const id = process.argv[2] ?? '';
let run: { command?: string; args?: string[] } = {};
try {
  if (/^[0-9a-f]{8,40}$/.test(id)) run = JSON.parse(readFileSync(requestFile(id), 'utf8')) as typeof run;
} catch (e) {
  process.stderr.write(`node-maint agent unit: cannot read the request of run ${JSON.stringify(id)}: ${(e as Error).message}\n`);
}
const main = run.command === 'audit-node' ? auditNodeMain : run.command === 'upgrade-node' ? upgradeNodeMain : undefined;
if (!main || !Array.isArray(run.args)) {
  process.stderr.write(`node-maint agent unit: run ${JSON.stringify(id)} has no command it knows\n`);
  process.exitCode = 2;
} else {
  process.exitCode = await main(run.args);
}
