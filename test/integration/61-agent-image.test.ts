import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { bed, bedDocker } from './bed.js';

// The agent's image as a user builds it (issue 44): runbooks/agent-image.mjs twice (the same bytes), the archive loaded
// into a Docker daemon (the bed's) and inspected, and the Containerfile built from the tree it leaves (a site's own
// builder): both run the same pinned Node.js and the agent, neither has a shell. The pool and kind nodes run the same
// build in tests 57 to 60 and 32.
const run = promisify(execFile);
const version = JSON.parse(readFileSync('package.json', 'utf8')).version as string;
const pinnedNode = JSON.parse(readFileSync('runbooks/agent-image.lock.json', 'utf8')).node as string;
const scratch = mkdtempSync(join(tmpdir(), 'nm-image-'));
const sha = (file: string) => createHash('sha256').update(readFileSync(file)).digest('hex');
const tags = [`node-maint/agent:${version}`, `node-maint/agent:${version}-amd64`, 'node-maint/agent:t61-containerfile'];

afterAll(async () => {
  rmSync(scratch, { recursive: true, force: true });
  const ours = (await bedDocker('images', '--format', '{{.Repository}}:{{.Tag}}', 'node-maint/agent')).split('\n').filter(Boolean);
  if (ours.length > 0) await bedDocker('rmi', '-f', ...ours);
});

describe("the agent's image", () => {
  it('builds reproducibly, loads with its version label and size, and the Containerfile builds the same image from the tree', async () => {
    const build = async (out: string, ...more: string[]) => (await run(process.execPath, ['runbooks/agent-image.mjs', '--arch', 'amd64', '--out', out, ...more])).stdout;
    const first = await build(join(scratch, 'a'));
    await build(join(scratch, 'b'), '--tree');
    const archive = join(scratch, 'a', `node-maint-agent-${version}-amd64.tar`);
    expect(first).toMatch(new RegExp(`^${archive} node-maint/agent:${version}-amd64 node-maint/agent:${version} node-maint/agent:${version}-[0-9a-f]{12} [0-9.]+ MiB \\(sha256 ${sha(archive).slice(0, 12)}\\)\\n$`));
    expect(sha(join(scratch, 'b', `node-maint-agent-${version}-amd64.tar`))).toBe(sha(archive));

    await run('docker', ['-H', bed().bedDockerHost, 'load', '-q', '-i', archive]);
    const [image] = JSON.parse(await bedDocker('image', 'inspect', `node-maint/agent:${version}`));
    expect(image.Config.Labels['org.opencontainers.image.version']).toBe(version);
    expect(image.Architecture).toBe('amd64');
    const mib = image.Size / 2 ** 20;
    expect(mib).toBeGreaterThan(50);
    expect(mib).toBeLessThan(Number(/ ([0-9.]+) MiB/.exec(first)![1]) + 1);

    await run('docker', ['-H', bed().bedDockerHost, 'build', '-q', '-f', 'runbooks/agent/Containerfile', '--build-arg', `VERSION=${version}`, '-t', tags[2]!, join(scratch, 'b', 'amd64')], { env: { ...process.env, DOCKER_BUILDKIT: '0' } });
    const [built] = JSON.parse(await bedDocker('image', 'inspect', tags[2]!));
    expect(built.Config.Labels['org.opencontainers.image.version']).toBe(version);
    expect(built.Config.Entrypoint).toEqual(image.Config.Entrypoint);
    for (const tag of [tags[0]!, tags[2]!]) {
      const inImage = (entrypoint: string, ...args: string[]) => bedDocker('run', '--rm', '--network', 'none', '--entrypoint', entrypoint, tag, ...args).catch((e: { stderr?: string; code?: number }) => `exit ${e.code}: ${e.stderr}`);
      expect(await inImage('/opt/node-maint/lib/ld.so', '--library-path', '/opt/node-maint/lib', '/opt/node-maint/bin/node', '-p', 'process.version + " " + require("fs").readFileSync("/opt/node-maint/VERSION", "utf8")')).toBe(`v${pinnedNode} ${readFileSync(join(scratch, 'b', 'amd64', 'rootfs', 'opt', 'node-maint', 'VERSION'), 'utf8').trim()}`);
      expect(await inImage('/bin/sh', '-c', 'true')).toMatch(/^exit \d+: .*(no such file|not found)/is);
      // Started outside a DaemonSet, the agent says what it lacks in one line.
      expect(await bedDocker('run', '--rm', '--network', 'none', tag).catch((e: { stderr?: string }) => e.stderr ?? '')).toMatch(/^node-maint agent: cannot start: NODE_NAME is not set .*\n$/m);
    }
  });
});
