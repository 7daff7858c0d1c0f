// Runs one benchmark (bench/NAME.mjs) as it is, its figures printed as they come, and writes what it printed into
// its own section of docs/benchmarks.md, with the date, the machine and the command: the page's figures are the
// benchmarks' own words, never retyped. Usage: node bench/record.mjs NAME [...more names]
import { spawn } from 'node:child_process';
import { cpus, totalmem } from 'node:os';
import { readFileSync, writeFileSync } from 'node:fs';

const page = new URL('../docs/benchmarks.md', import.meta.url);
const machine = () => `${cpus().length} cores (${cpus()[0]?.model.trim()}), ${Math.round(totalmem() / 2 ** 30)} GiB, Node.js ${process.version}`;

/** The benchmark's stdout, printed live; its exit code. */
function runBench(name) {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [`bench/${name}.mjs`], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (d) => {
      process.stdout.write(d);
      out += d;
    });
    child.on('close', (code) => resolve({ code, out }));
  });
}

/** The section `## bench:NAME` of the page, replaced up to the next `## `. */
function writeSection(name, body) {
  const text = readFileSync(page, 'utf8');
  const heading = `## bench:${name}\n`;
  const start = text.indexOf(heading);
  const section = `${heading}\n${body}\n`;
  if (start < 0) return writeFileSync(page, `${text.trimEnd()}\n\n${section}`);
  const next = text.indexOf('\n## ', start + heading.length);
  writeFileSync(page, `${text.slice(0, start)}${section}${next < 0 ? '' : text.slice(next + 1)}`);
}

let failed = 0;
for (const name of process.argv.slice(2)) {
  const at = new Date().toISOString().slice(0, 16).replace('T', ' ');
  const { code, out } = await runBench(name);
  if (code !== 0) {
    failed++;
    console.error(`bench ${name} exited ${code}: its section is left as it was`);
    continue;
  }
  writeSection(name, `Measured ${at} UTC on ${machine()}, by \`node bench/${name}.mjs\` (npm run bench):\n\n\`\`\`\n${out.trimEnd()}\n\`\`\``);
}
process.exitCode = failed > 0 ? 1 : 0;
