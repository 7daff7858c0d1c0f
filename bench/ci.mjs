// What bench/ci-run.mjs and bench/ci-cold.mjs share: `bash .ci/run` run in a checkout, and its output summed up in the
// run's own words (its parts in seconds, the bed's steps, the suite's summary, where its CPU went).
import { spawn } from 'node:child_process';

export const plain = (text) => text.replace(/\x1b\[[0-9;]*m/g, '');

/** The output of `bash .ci/run` in `cwd`, shown live on stderr (it is long), its exit code and seconds by this clock. */
export function runCi(cwd = '.') {
  return new Promise((resolve, reject) => {
    const t0 = Date.now();
    const child = spawn('bash', ['.ci/run'], { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    const keep = (d) => {
      process.stderr.write(d);
      out += d;
    };
    child.stdout.on('data', keep);
    child.stderr.on('data', keep);
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, out: plain(out), seconds: (Date.now() - t0) / 1000 }));
  });
}

/** The first capture of `pattern` in the text, or undefined. */
export const find = (text, pattern) => text.match(pattern)?.[1];

export function summarise(text, source) {
  const up = Number(find(text, /== testbed up after (\d+)s/));
  const done = Number(find(text, /== done in (\d+)s/));
  const suite = Number(find(text, /^\s*Duration\s+([\d.]+)\s*s/m));
  const files = find(text, /^\s*Test Files\s+(.+)$/m)?.trim();
  const tests = find(text, /^\s*Tests\s+(.+)$/m)?.trim();
  const cache = find(text, /cache: (\S+)/);
  // testbed/up's last line: each of its steps and what it took.
  const steps = find(text, /\] up in \d+s: (.+)$/m)?.split(', ');
  const cpu = text.match(/^Where the CPU went: .*$(\n^ {2}\s*\d+ s CPU.*$)*/m)?.[0];
  const bed = text.match(/^Where the bed's CPU went meanwhile:$(\n^ {2}the .*$)*/m)?.[0];
  const s = (n) => (Number.isFinite(n) ? `${n.toFixed(0)} s` : 'not in the output');
  return [
    source,
    `  npm ci and the bed up:       ${s(up)}${cache ? ` (the bed's cache ${cache})` : ''}`,
    ...(steps ? [`  the bed's steps: ${steps.join(', ')}`] : []),
    `  the kind dry run, the build: ${s(done - up - suite)}`,
    `  npm test:                    ${s(suite)}`,
    `  in all:                      ${s(done)}${Number.isFinite(done) ? '' : ' (the run did not end: see its output)'}`,
    `  test files: ${files ?? 'not in the output'}`,
    `  tests:      ${tests ?? 'not in the output'}`,
    ...[cpu, bed].filter(Boolean).flatMap((block) => block.split('\n').map((l) => `  ${l}`)),
  ].join('\n');
}
