// What CI's path costs with the bed's cache as it is: `bash .ci/run` (npm ci, the bed up, the kind dry run, the whole
// suite), its parts in seconds, the suite's summary and where its CPU went, in the run's own words. BENCH_CI_LOG=FILE
// reads the output of a run that already happened (CI's, or one kept with `bash .ci/run > FILE 2>&1`) instead.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { find, plain, runCi, summarise } from './ci.mjs';

const log = process.env.BENCH_CI_LOG;
if (log) {
  const text = plain(readFileSync(log, 'utf8'));
  const commit = find(text, /^== commit (\S+)/m) ?? 'its commit not in the output';
  console.log(summarise(text, `bash .ci/run at ${commit}, read from its output in ${log}`));
} else {
  const commit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).trim();
  const { code, out } = await runCi();
  console.log(summarise(out, `bash .ci/run at ${commit}, the bed's cache as it was: exit ${code}`));
  process.exitCode = code ?? 1;
}
