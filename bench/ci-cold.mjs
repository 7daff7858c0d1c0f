// What CI's path costs on a fresh machine: `bash .ci/run` from a clean clone of HEAD with the bed's cache empty (every
// third-party binary built from Go modules again, its modules downloaded again). The Debian packages and npm's cache
// stay as they are (a minute or two on a fresh machine). The bed is brought down first and its cache moved aside,
// never deleted (its new path is printed); at the end the bed the clone brought up is brought down again, so that the
// next `npm test` here brings it up from this checkout, on the cache this run built.
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, renameSync, rmSync } from 'node:fs';
import { runCi, summarise } from './ci.mjs';

const cache = process.env.TESTBED_CACHE ?? '/var/cache/node-maint-testbed';
const commit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).trim();
const down = (cwd) => spawnSync('bash', ['testbed/down'], { cwd, stdio: ['ignore', 2, 2] });

// A bed that would not come down keeps using the cache: nothing is moved then.
if (down('.').status !== 0) throw new Error('testbed/down failed: the cache is left where it is, nothing was run');
const aside = `${cache}.before-cold-${new Date().toISOString().replace(/[:.]/g, '-')}`;
const moved = existsSync(cache);
if (moved) renameSync(cache, aside);
const clone = mkdtempSync('/tmp/node-maint-cold-');
execFileSync('git', ['clone', '--quiet', '.', clone]);
const { code, out } = await runCi(clone);
down(clone);
rmSync(clone, { recursive: true, force: true });
console.log(summarise(out, `bash .ci/run at ${commit} from a clean clone, the bed's cache empty: exit ${code}`));
console.log(moved ? `  the cache before this run: ${aside} (rm -rf it once done with it)` : '  there was no cache before this run');
process.exitCode = code ?? 1;
