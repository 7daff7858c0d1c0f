// What CI's path costs: `bash .ci/run` (npm ci, the bed up, the kind dry run, the whole suite), its parts in seconds,
// the suite's summary and where its CPU went, in the run's own words. BENCH_CI_LOG=FILE reads the output of a run
// that already happened (CI's, or one kept with `bash .ci/run > FILE 2>&1`) instead of running it again.
import { spawn, execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

const plain = (text) => text.replace(/\x1b\[[0-9;]*m/g, '');

/** The output of `bash .ci/run`, shown live on stderr (it is long), and how long it took by this clock. */
function runCi() {
  return new Promise((resolve, reject) => {
    const t0 = Date.now();
    const child = spawn('bash', ['.ci/run'], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    const keep = (d) => {
      process.stderr.write(d);
      out += d;
    };
    child.stdout.on('data', keep);
    child.stderr.on('data', keep);
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, out, seconds: (Date.now() - t0) / 1000 }));
  });
}

/** The first capture of `pattern` in the text, or undefined. */
const find = (text, pattern) => text.match(pattern)?.[1];

function summarise(text, source) {
  const up = Number(find(text, /== testbed up after (\d+)s/));
  const done = Number(find(text, /== done in (\d+)s/));
  const suite = Number(find(text, /^\s*Duration\s+([\d.]+)\s*s/m));
  const files = find(text, /^\s*Test Files\s+(.+)$/m)?.trim();
  const tests = find(text, /^\s*Tests\s+(.+)$/m)?.trim();
  const cpu = text.match(/^Where the CPU went: .*$(\n^ {2}\s*\d+ s CPU.*$)*/m)?.[0];
  const s = (n) => (Number.isFinite(n) ? `${n.toFixed(0)} s` : 'not in the output');
  return [
    source,
    `  npm ci and the bed up:       ${s(up)}${find(text, /cache: (\S+)/) ? ` (the bed's cache ${find(text, /cache: (\S+)/)})` : ''}`,
    `  the kind dry run, the build: ${s(done - up - suite)}`,
    `  npm test:                    ${s(suite)}`,
    `  in all:                      ${s(done)}${Number.isFinite(done) ? '' : ' (the run did not end: see its output)'}`,
    `  test files: ${files ?? 'not in the output'}`,
    `  tests:      ${tests ?? 'not in the output'}`,
    ...(cpu ? cpu.split('\n').map((l) => `  ${l}`) : []),
  ].join('\n');
}

const log = process.env.BENCH_CI_LOG;
if (log) {
  const text = plain(readFileSync(log, 'utf8'));
  const commit = find(text, /^== commit (\S+)/m) ?? 'its commit not in the output';
  console.log(summarise(text, `bash .ci/run at ${commit}, read from its output in ${log}`));
} else {
  const commit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).trim();
  const { code, out } = await runCi();
  console.log(summarise(plain(out), `bash .ci/run at ${commit}, the bed's cache as it was: exit ${code}`));
  process.exitCode = code ?? 1;
}
