import type * as pulumi from '@pulumi/pulumi';
import type { NodeUpgradeInputs } from './apply.js';

// The dynamic provider for one node's runtime upgrade. Pulumi serializes it into the state and runs it in a separate
// process: it captures nothing but the library's URL (a string) and loads the library, and every client, inside its
// methods. check and diff are pure, so `pulumi preview` changes nothing; diff looks only at the node, its targets and
// its versions, so a changed window or order never makes a node that is done show a change.
export type ProviderInputs = NodeUpgradeInputs & {
  /** Installed versions the program saw when it planned; drift from the targets is a change. */
  observed?: Record<string, string>;
  sshKey?: string;
  /** A Pulumi secret, like the SSH key: Slack-style URLs carry a token. */
  webhook?: string;
};

export function nodeUpgradeProvider(libraryUrl: string): pulumi.dynamic.ResourceProvider {
  const run = async (inputs: ProviderInputs) => {
    const lib = await import(libraryUrl);
    const { sshKey, observed, webhook, ...rest } = inputs;
    void observed;
    const log = (line: string) => console.error(line);
    const tell = (outcome: Record<string, unknown>) => lib.notifyNodeEnd(webhook, rest, { node: inputs.node, ...outcome }, log);
    const stop = async (result: string, message: string, extra: Record<string, unknown> = {}): Promise<never> => {
      await tell({ result, error: message, ...extra });
      throw new Error(message);
    };
    // Checked as each node starts, not once per `pulumi up`: a pause, a closing window or a firing alert stops the
    // waves after it.
    const holds: string[] = await lib.fleetHolds(rest, new Date());
    if (holds.length > 0) await stop('not-started', `${inputs.node}: not started: ${holds.join('; ')}`);
    const before = await lib.beforeFleetNode(rest, log).catch((e: Error) => stop('not-started', e.message));
    const started = Date.now();
    const report = await lib.upgradeFleetNode(rest, sshKey, log);
    // An undrainable node, left as it was, is passed by when the operator said so; every other failure stops the fleet.
    const undrainable: string | undefined = report.exitCode !== 0 && inputs.undrainable === 'skip' ? lib.undrainableReason(report) : undefined;
    if (undrainable !== undefined) {
      await lib.markSkipped(rest, report.runId, undrainable, log);
      log(`[${inputs.node}] skipped (undrainable, left as it was): ${undrainable}`);
    } else if (report.exitCode !== 0) {
      const rolled = report.rollback.map((r: { step: string; status: string }) => `${r.step} ${r.status}`).join(', ');
      await stop(report.result, `${inputs.node}: ${report.result} (exit ${report.exitCode}): ${report.error?.message ?? ''}${rolled ? `; rollback: ${rolled}` : ''}`, { exitCode: report.exitCode, runId: report.runId });
    }
    // Whatever the run did to the node, the next wave waits until it and its workloads are back.
    await lib.afterFleetNode(rest, before, log).catch((e: Error) => stop('gate-failed', e.message, { runId: report.runId }));
    const outs = {
      node: inputs.node,
      targets: inputs.targets,
      result: undrainable === undefined ? report.result : lib.SKIPPED_RESULT,
      skipped: undrainable ?? null,
      runId: report.runId,
      versionsBefore: report.versions.before,
      versionsAfter: report.versions.after,
      steps: report.steps.map((s: { name: string; status: string; summary: string; durationMs: number }) => ({ name: s.name, status: s.status, summary: s.summary, durationMs: s.durationMs })),
      audit: report.audit ?? null,
      durationMs: report.durationMs,
      providerMs: Date.now() - started,
    };
    await tell({ result: outs.result, runId: outs.runId, versionsBefore: outs.versionsBefore, versionsAfter: outs.versionsAfter, durationMs: outs.durationMs, ...(undrainable !== undefined ? { error: undrainable } : {}) });
    return outs;
  };
  return {
    async check(_olds: ProviderInputs, news: ProviderInputs) {
      const failures = [];
      if (typeof news.node !== 'string' || news.node === '') failures.push({ property: 'node', reason: 'node is required' });
      if (!news.targets || Object.keys(news.targets).length === 0) failures.push({ property: 'targets', reason: 'targets are required' });
      return { inputs: news, failures };
    },
    async diff(_id: string, olds: ProviderInputs & { versionsAfter?: Record<string, string> }, news: ProviderInputs) {
      const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);
      const replaces = olds.node === news.node ? [] : ['node'];
      const current = news.observed ?? olds.versionsAfter;
      const changes = replaces.length > 0 || !same(olds.targets, news.targets) || !same(current, news.targets);
      return { changes, replaces, deleteBeforeReplace: true };
    },
    async create(inputs: ProviderInputs) {
      return { id: inputs.node, outs: await run(inputs) };
    },
    async update(_id: string, _olds: ProviderInputs, news: ProviderInputs) {
      return { outs: await run(news) };
    },
    // Taking a node out of the fleet's config leaves the node as it is.
    async delete() {},
  };
}
