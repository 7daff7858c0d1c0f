import { existsSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

// docs/benchmarks.md holds no figure typed by hand: past its introduction, every section is one that
// bench/record.mjs wrote, the benchmark's printed output as it came, with the date, the machine and the command.
const page = readFileSync('docs/benchmarks.md', 'utf8');
const sections = page.split(/^(?=## )/m).slice(1);

describe('docs/benchmarks.md', () => {
  it('is one section a benchmark, each as bench/record.mjs wrote it', () => {
    expect(sections.length).toBeGreaterThan(0);
    for (const section of sections) {
      const name = section.match(/^## bench:([a-z-]+)\n/)?.[1];
      expect(name, `a heading of a benchmark: ${section.split('\n')[0]}`).toBeDefined();
      expect(existsSync(`bench/${name}.mjs`), `bench/${name}.mjs`).toBe(true);
      const recorded = new RegExp(
        `^## bench:${name}\\n\\nMeasured \\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d UTC on \\d+ cores \\(.*\\), \\d+ GiB, ` +
          `Node\\.js v[\\d.]+, by \`node bench/${name}\\.mjs\` \\(npm run bench\\):\\n\\n\`\`\`\\n[^]*?\\n\`\`\`\\n+$`,
      );
      expect(section, `bench:${name} as its benchmark wrote it, nothing by hand`).toMatch(recorded);
    }
  });

  it('has a section for each benchmark npm run bench runs', () => {
    const run = readFileSync('bench/run.mjs', 'utf8');
    const names = [...run.split("'bench/record.mjs'")[1]!.split(']')[0]!.matchAll(/'([a-z-]+)'/g)].map((m) => m[1]!);
    expect(names).toContain('audit-node');
    for (const name of names) expect(page, `a section bench:${name}`).toContain(`\n## bench:${name}\n`);
  });
});
