import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ExitCode, EXIT_CODE_MEANINGS, type ExitCodeName } from '../../../src/errors.js';
import { UPGRADE_HELP } from '../../../src/cli/upgrade-node.js';
import { STEPS } from '../../../src/steps/index.js';

// The README's tables are the code's own words: a step's rollback and an exit code's meaning are written once.
const readme = readFileSync('README.md', 'utf8');
const rows = (header: string) => {
  const start = readme.indexOf(header);
  return readme.slice(start).split('\n').slice(2).filter((l, i, all) => all.slice(0, i + 1).every((x) => x.startsWith('| ')));
};

describe('the README', () => {
  it('lists what each step\'s rollback does, in order, as the steps say it', () => {
    expect(rows('| step | rollback |')).toEqual(STEPS.map((s) => `| ${s.name} | ${s.undo} |`));
  });
  it('lists every exit code with its meaning, as --help does', () => {
    const names = Object.keys(ExitCode) as ExitCodeName[];
    expect(rows('| exit | meaning |')).toEqual(names.map((n) => `| ${ExitCode[n]} | ${EXIT_CODE_MEANINGS[n]} |`));
    for (const n of names) expect(UPGRADE_HELP).toContain(`${String(ExitCode[n]).padStart(2)}  ${EXIT_CODE_MEANINGS[n]}`);
  });
  it('documents every flag of upgrade-node', () => {
    for (const flag of UPGRADE_HELP.match(/--[a-z-]+/g)!) expect(readme, flag).toContain(flag);
  });
});
