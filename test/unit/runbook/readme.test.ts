import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ExitCode, EXIT_CODE_MEANINGS, type ExitCodeName } from '../../../src/errors.js';
import { UPGRADE_HELP } from '../../../src/cli/upgrade-node.js';
import { STEPS } from '../../../src/steps/index.js';

// The documentation's tables are the code's own words: a step's rollback and an exit code's meaning are written once.
const readme = readFileSync('README.md', 'utf8');
const safety = readFileSync('docs/safety.md', 'utf8');
const docs = readdirSync('docs').filter((f) => f.endsWith('.md')).map((f) => readFileSync(join('docs', f), 'utf8'));

/** The rows of the table whose header line is `header`, in `text`: the lines after its separator that start with `| `. */
const rows = (text: string, header: string) => {
  const start = text.indexOf(header);
  expect(start, `a table with the header ${header}`).toBeGreaterThanOrEqual(0);
  const lines = text.slice(start).split('\n').slice(2);
  const end = lines.findIndex((l) => !l.startsWith('| '));
  return end < 0 ? lines : lines.slice(0, end);
};

/** The relative targets of the Markdown links in `text` (`[text](target)`), without their #anchor. */
const relativeLinks = (text: string) =>
  [...text.matchAll(/\]\(([^)\s]+)\)/g)]
    .map((m) => m[1]!)
    .filter((t) => !/^[a-z][a-z0-9+.-]*:/i.test(t) && !t.startsWith('#'))
    .map((t) => t.split('#')[0]!);

describe('the README and docs/', () => {
  it('lists what each step\'s rollback does, in order, as the steps say it (docs/safety.md)', () => {
    expect(rows(safety, '| step | rollback |')).toEqual(STEPS.map((s) => `| ${s.name} | ${s.undo} |`));
  });
  it('lists every exit code with its meaning, as --help does (README.md)', () => {
    const names = Object.keys(ExitCode) as ExitCodeName[];
    expect(rows(readme, '| exit | meaning |')).toEqual(names.map((n) => `| ${ExitCode[n]} | ${EXIT_CODE_MEANINGS[n]} |`));
    for (const n of names) expect(UPGRADE_HELP).toContain(`${String(ExitCode[n]).padStart(2)}  ${EXIT_CODE_MEANINGS[n]}`);
  });
  it('documents every flag of upgrade-node, in README.md or a page of docs/', () => {
    const flags = [...new Set(UPGRADE_HELP.match(/--[a-z-]+/g)!)];
    expect(flags.length).toBeGreaterThan(30);
    // A flag is documented when it appears as itself: `--timeout` is not found inside `--reboot-timeout`.
    const documented = (flag: string) => [readme, ...docs].some((text) => new RegExp(`(^|[^a-z-])${flag}(?![a-z-])`).test(text));
    expect(flags.filter((flag) => !documented(flag))).toEqual([]);
  });
  it('is a README read in ten minutes: at most 300 lines', () => {
    expect(readme.split('\n').length - (readme.endsWith('\n') ? 1 : 0)).toBeLessThanOrEqual(300);
  });
  it('links only to files that exist, from the README and from docs/', () => {
    const missing: string[] = [];
    for (const target of relativeLinks(readme)) if (!existsSync(target)) missing.push(`README.md -> ${target}`);
    for (const f of readdirSync('docs').filter((n) => n.endsWith('.md'))) {
      for (const target of relativeLinks(readFileSync(join('docs', f), 'utf8'))) {
        if (!existsSync(join(dirname(join('docs', f)), target))) missing.push(`docs/${f} -> ${target}`);
      }
    }
    expect(relativeLinks(readme).length).toBeGreaterThan(0);
    expect(missing).toEqual([]);
  });
  it('marks every fenced block: run by a test or CI, or needing a real cluster', () => {
    const lines = readme.split('\n');
    const tests = readdirSync('test/integration').map((f) => readFileSync(`test/integration/${f}`, 'utf8')).join('\n');
    let open: string | undefined;
    let inBlock = false;
    lines.forEach((line, i) => {
      const pair = /^<!-- (\/?)([a-z-]+) -->$/.exec(line);
      if (pair) open = pair[1] ? undefined : pair[2];
      if (!line.startsWith('```')) return;
      inBlock = !inBlock;
      if (!inBlock) return;
      const before = lines.slice(Math.max(0, i - 2), i).join('\n');
      const marked = /<!-- (needs a real cluster|runs in: [^>]+) -->/.test(before) || (open !== undefined && tests.includes(`readmeBlock('${open}')`));
      expect(marked, `README line ${i + 1}: ${lines[i + 1]}`).toBe(true);
    });
  });
});
