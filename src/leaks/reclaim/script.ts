import { replayScript } from '../../node/cni/replay.js';
import type { RuntimeFlavor } from '../../node/state/types.js';
import { quote } from '../../node/transport/quote.js';
import type { ReclaimPlan } from './plan.js';

// The node side of reclaim, in one script: back up, replay DELs, then delete what is still dead under host-local's
// own flock, re-checking each file's owner inside the lock. Prints one "<verdict>\t<what>" line per item.
export function reclaimScript(plan: ReclaimPlan, options: { flavor: RuntimeFlavor; binDir: string; backupDir: string; ipamRoots: string[] }): string {
  // Whether the owner lives, in three answers: a runtime that fails to answer (busy, restarting) proves no death.
  const state = options.flavor === 'containerd'
    ? [
      'o=$(crictl --timeout 30s inspectp "$1" 2>&1) && echo alive && return',
      'case $o in *"code = NotFound"*) ;; *) echo unknown; return ;; esac',
      'o=$(crictl --timeout 30s inspect "$1" 2>&1) && echo alive && return',
      'case $o in *"code = NotFound"*) echo dead ;; *) echo unknown ;; esac',
    ]
    : [
      'o=$(docker inspect --type container "$1" 2>&1) && echo alive && return',
      'case $o in *"No such container"*) echo dead ;; *) echo unknown ;; esac',
    ];
  // The two branches after a file's own checks: alive is kept, unknown is kept and said; only dead goes on.
  const ownerChecked = [
    'elif s=$(container_state "$id"); [ "$s" = alive ]; then printf "alive\\t%s\\n" "$f"',
    'elif [ "$s" != dead ]; then unknown "$f" "$id"',
  ];
  const lines = [
    'set +e',
    `B=${quote(options.backupDir)}`,
    'mkdir -p "$B"',
    `container_state() {\n  local o\n  ${state.join('\n  ')}\n}`,
    'unknown() { printf "failed\\t%s\\tkept: the runtime did not say whether container %s exists\\n" "$1" "$2"; }',
    'backup() { mkdir -p "$B$(dirname "$1")" && cp -p "$1" "$B$1"; }',
  ];
  for (const r of plan.replays) lines.push(`backup ${quote(r.entryPath)}`);
  lines.push(replayScript(plan.replays, options.binDir).replace(/^set \+e\n/, '').replace(/printf 'ok\\t/g, "printf 'released\\t").replace(/printf 'fail\\t/g, "printf 'failed\\t"));

  const byDir = new Map<string, ReclaimPlan['reservations']>();
  for (const r of plan.reservations) byDir.set(r.dir, [...(byDir.get(r.dir) ?? []), r]);
  for (const [dir, items] of byDir) {
    // Held for the whole decide-and-delete step, exactly the lock host-local's ADD and DEL take.
    lines.push(`exec 9>>${quote(`${dir}/lock`)}`, 'flock -x 9');
    for (const r of items) {
      lines.push(
        `f=${quote(r.path)}; id=${quote(r.containerId)}`,
        'if [ ! -f "$f" ]; then printf "gone\\t%s\\n" "$f"',
        'elif [ "$(head -n1 "$f" | tr -d "\\r")" != "$id" ]; then printf "changed\\t%s\\n" "$f"',
        ...ownerChecked,
        'elif backup "$f" && rm -f "$f"; then printf "freed\\t%s\\n" "$f"',
        'else printf "failed\\t%s\\n" "$f"; fi',
      );
    }
    lines.push('flock -u 9', 'exec 9>&-');
  }
  for (const c of plan.checkpoints) {
    const ipamHolds = `grep -rlsx -e ${quote(c.sandboxId)} -e ${quote(`${c.sandboxId}\r`)} ${options.ipamRoots.map((r) => quote(r)).join(' ')} >/dev/null 2>&1`;
    lines.push(
      `f=${quote(c.path)}; id=${quote(c.sandboxId)}`,
      'if [ ! -f "$f" ]; then printf "gone\\t%s\\n" "$f"',
      ...ownerChecked,
      `elif ls /var/lib/cni/cache/results/*-"$id"-* /var/lib/cni/results/*-"$id"-* >/dev/null 2>&1 || ${ipamHolds}; then printf "network-held\\t%s\\n" "$f"`,
      'elif backup "$f" && rm -f "$f"; then printf "freed\\t%s\\n" "$f"',
      'else printf "failed\\t%s\\n" "$f"; fi',
    );
  }
  for (const n of plan.netns) {
    lines.push(
      `n=${quote(n)}`,
      'if [ -n "$(ip netns pids "$n" 2>/dev/null)" ]; then printf "alive\\t%s\\n" "$n"',
      'elif ip netns delete "$n" 2>/dev/null; then printf "freed\\t%s\\n" "$n"',
      'else printf "failed\\t%s\\n" "$n"; fi',
    );
  }
  for (const c of plan.containers) {
    const rm = options.flavor === 'containerd' ? `crictl rm ${quote(c.id)}` : `docker rm ${quote(c.id)}`;
    lines.push(`if ${rm} >/dev/null 2>&1; then printf "freed\\t%s\\n" ${quote(c.id)}; else printf "failed\\t%s\\n" ${quote(c.id)}; fi`);
  }
  return lines.join('\n');
}

export interface ReclaimOutcome {
  verdict: 'released' | 'freed' | 'gone' | 'changed' | 'alive' | 'network-held' | 'failed';
  target: string;
  detail?: string;
}

export function parseReclaimOutput(text: string): ReclaimOutcome[] {
  return text
    .split('\n')
    .map((line) => line.split('\t'))
    .filter(([verdict, target]) => verdict && target)
    .map(([verdict, target, detail]) => ({ verdict: verdict as ReclaimOutcome['verdict'], target: target!, detail }));
}
