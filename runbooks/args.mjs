import { fileURLToPath } from 'node:url';
import { realpathSync } from 'node:fs';

// The arguments after this script's path, whether it runs under zx or plain node.
export function scriptArgs(moduleUrl) {
  const self = realpathSync(fileURLToPath(moduleUrl));
  const at = process.argv.findIndex((a) => {
    try {
      return realpathSync(a) === self;
    } catch {
      return false;
    }
  });
  return at >= 0 ? process.argv.slice(at + 1) : process.argv.slice(2);
}
