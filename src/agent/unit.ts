import { auditNodeMain } from '../cli/audit-node.js';
import { upgradeNodeMain } from '../cli/upgrade-node.js';

// What the agent's unit runs on the host: one of the CLI's commands, with the arguments the caller gave and the
// agent's local transport and short-lived kubeconfig. Its output is the caller's to read (the agent publishes it).
const [command, ...args] = process.argv.slice(2);
const main = command === 'audit-node' ? auditNodeMain : command === 'upgrade-node' ? upgradeNodeMain : undefined;
if (!main) {
  process.stderr.write(`node-maint agent unit: unknown command ${JSON.stringify(command)}\n`);
  process.exitCode = 2;
} else {
  process.exitCode = await main(args);
}
