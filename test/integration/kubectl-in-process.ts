import { readFileSync } from 'node:fs';
import type { Cluster } from '../../src/cluster/api.js';

// The suite's commonest kubectl writes, done in its own process through the runbook's client: a kubectl costs a tenth
// of a CPU second and the suite runs hundreds. Only forms whose meaning is plain are taken (delete, label, annotate,
// patch, cordon, uncordon, apply of a file of JSON); any other form, flag or kind gets undefined, and kubectl runs.

/** kubectl does not retry: a test that cuts the API off sees a write fail, as it would with kubectl. */
const NO_RETRY = { retry: false };

interface Resource {
  /** The collection's path without namespace: /api/v1/pods, /apis/apps/v1/deployments. */
  group: string;
  plural: string;
  namespaced: boolean;
  /** As kubectl names the kind in its output: pod, deployment.apps. */
  display: string;
}

/** Every name kubectl takes for a kind (plural, singular, short names, Kind, plural.group), from the API's discovery. */
async function discover(api: Cluster): Promise<Map<string, Resource>> {
  const byName = new Map<string, Resource>();
  const versions: string[] = ['/api/v1'];
  const groups = await api.get<{ groups: Array<{ name: string; preferredVersion: { groupVersion: string } }> }>('/apis', { retry: false });
  for (const g of groups.groups) versions.push(`/apis/${g.preferredVersion.groupVersion}`);
  await Promise.all(versions.map(async (path) => {
    const list = await api.get<{ resources: Array<{ name: string; singularName?: string; kind: string; namespaced: boolean; shortNames?: string[] }> }>(path, { retry: false });
    const groupName = path === '/api/v1' ? '' : path.split('/')[2]!;
    for (const r of list.resources.filter((x) => !x.name.includes('/'))) {
      const resource = { group: path, plural: r.name, namespaced: r.namespaced, display: groupName ? `${r.singularName || r.kind.toLowerCase()}.${groupName}` : r.singularName || r.kind.toLowerCase() };
      const names = [r.name, r.singularName, r.kind.toLowerCase(), ...(r.shortNames ?? [])].filter(Boolean) as string[];
      // The core group wins a bare name (as kubectl's order has it); plural.group always names one.
      for (const n of names) if (!byName.has(n) || !groupName) byName.set(n, resource);
      if (groupName) for (const n of names) byName.set(`${n}.${groupName}`, resource);
      byName.set(`${r.kind}|${path.replace(/^\/apis?\//, '')}`, resource);
    }
  }));
  return byName;
}

let known: Promise<Map<string, Resource>> | undefined;

/** A kind by kubectl's name for it (or `Kind|group/version`); discovery read again once for a kind new since (a CRD). */
async function resourceNamed(api: Cluster, name: string): Promise<Resource | undefined> {
  known ??= discover(api);
  const found = (await known).get(name.toLowerCase().includes('|') ? name : name.toLowerCase());
  if (found) return found;
  known = discover(api);
  return (await known).get(name.includes('|') ? name : name.toLowerCase());
}

const objectPathOf = (r: Resource, name: string, namespace: string) =>
  `${r.group}${r.namespaced ? `/namespaces/${encodeURIComponent(namespace)}` : ''}/${r.plural}/${encodeURIComponent(name)}`;

interface Parsed {
  positional: string[];
  namespace: string;
  flags: Map<string, string>;
}

/** Positional words, -n, and --flag[=value] / --flag value for the flags named in `withValue`; undefined on any other flag. */
function parse(args: string[], allowed: string[], withValue: string[]): Parsed | undefined {
  const parsed: Parsed = { positional: [], namespace: 'default', flags: new Map() };
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    if (a === '-n' || a === '--namespace') parsed.namespace = args[++i]!;
    else if (a.startsWith('-')) {
      const [flag, inline] = a.split(/=(.*)/s) as [string, string | undefined];
      if (!allowed.includes(flag)) return undefined;
      parsed.flags.set(flag, inline ?? (withValue.includes(flag) ? args[++i]! : 'true'));
    } else parsed.positional.push(a);
  }
  return parsed;
}

const wanted = (p: Parsed, flag: string) => ['true', ''].includes(p.flags.get(flag) ?? 'false');

/** kubectl's duration flags (--timeout=120s, 2m) in ms. */
const durationMs = (text: string) => {
  const m = /^(\d+)(ms|s|m|h)?$/.exec(text);
  if (!m) throw new Error(`kubectl-in-process: duration ${text}`);
  return Number(m[1]) * { ms: 1, s: 1000, m: 60_000, h: 3_600_000 }[m[2] ?? 's']!;
};

async function waitGone(api: Cluster, path: string, uid: string | undefined, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const there = await api.get<{ metadata: { uid: string } }>(path, { retry: false }).catch((e: { status?: number }) => (e.status === 404 ? undefined : Promise.reject(e)));
    if (!there || (uid && there.metadata.uid !== uid)) return;
    if (Date.now() > deadline) throw new Error(`timed out waiting for the deletion of ${what}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

/** `delete KIND[,KIND] NAME...`: kubectl's default waits until each is gone. */
async function del(api: Cluster, args: string[]): Promise<string | undefined> {
  const p = parse(args, ['--ignore-not-found', '--wait', '--grace-period', '--timeout', '--now'], ['--grace-period', '--timeout']);
  if (!p || p.positional.length < 2) return undefined;
  const [kinds, ...names] = p.positional as [string, ...string[]];
  const resources = await Promise.all(kinds.split(',').map((k) => resourceNamed(api, k)));
  if (resources.some((r) => !r) || names.some((n) => n.includes('/'))) return undefined;
  const grace = wanted(p, '--now') ? 1 : p.flags.has('--grace-period') ? Number(p.flags.get('--grace-period')) : undefined;
  const wait = !p.flags.has('--wait') || wanted(p, '--wait');
  const timeoutMs = p.flags.has('--timeout') ? durationMs(p.flags.get('--timeout')!) : 300_000;
  const lines: string[] = [];
  for (const r of resources as Resource[]) {
    for (const name of names) {
      const path = objectPathOf(r, name, p.namespace);
      const options = { kind: 'DeleteOptions', apiVersion: 'v1', propagationPolicy: 'Background', gracePeriodSeconds: grace };
      const gone = await api.request<{ metadata?: { uid?: string } }>('DELETE', path, options, undefined, NO_RETRY).catch((e: { status?: number }) => {
        if (e.status === 404 && wanted(p, '--ignore-not-found')) return undefined;
        throw e;
      });
      if (!gone) continue;
      if (wait) await waitGone(api, path, gone.metadata?.uid, timeoutMs, `${r.display}/${name}`);
      lines.push(`${r.display} "${name}" deleted`);
    }
  }
  return lines.map((l) => `${l}\n`).join('');
}

/** `label|annotate KIND NAME k=v k- ... [--overwrite]`: a merge patch; a changed value without --overwrite is refused, as kubectl does. */
async function mark(api: Cluster, field: 'labels' | 'annotations', args: string[]): Promise<string | undefined> {
  const p = parse(args, ['--overwrite'], []);
  if (!p || p.positional.length < 3) return undefined;
  const [kind, name, ...changes] = p.positional as [string, string, ...string[]];
  const r = await resourceNamed(api, kind);
  if (!r || changes.some((c) => !/^[^=]+=.*$|^[^=]+-$/.test(c))) return undefined;
  const path = objectPathOf(r, name, p.namespace);
  const values = Object.fromEntries(changes.map((c) => (c.endsWith('-') && !c.includes('=') ? [c.slice(0, -1), null] : [c.slice(0, c.indexOf('=')), c.slice(c.indexOf('=') + 1)])));
  if (!wanted(p, '--overwrite')) {
    const now = (await api.get<{ metadata: Record<string, Record<string, string> | undefined> }>(path, { retry: false })).metadata[field] ?? {};
    const clash = Object.entries(values).find(([k, v]) => v !== null && k in now && now[k] !== v);
    if (clash) throw new Error(`error: '${clash[0]}' already has a value (${now[clash[0]]}), and --overwrite is false`);
  }
  await api.request('PATCH', path, { metadata: { [field]: values } }, PATCH_TYPES.merge, NO_RETRY);
  return `${r.display}/${name} ${field === 'labels' ? 'labeled' : 'annotated'}\n`;
}

const PATCH_TYPES: Record<string, string | undefined> & { merge: string } = {
  merge: 'application/merge-patch+json',
  json: 'application/json-patch+json',
  strategic: 'application/strategic-merge-patch+json',
};

/** `patch KIND NAME -p JSON [--type merge|json|strategic]`. */
async function patch(api: Cluster, args: string[]): Promise<string | undefined> {
  const p = parse(args, ['-p', '--patch', '--type'], ['-p', '--patch', '--type']);
  const body = p?.flags.get('-p') ?? p?.flags.get('--patch');
  if (!p || p.positional.length !== 2 || body === undefined) return undefined;
  const contentType = PATCH_TYPES[p.flags.get('--type') ?? 'strategic'];
  const r = await resourceNamed(api, p.positional[0]!);
  if (!r || !contentType) return undefined;
  await api.request('PATCH', objectPathOf(r, p.positional[1]!, p.namespace), JSON.parse(body), contentType, NO_RETRY);
  return `${r.display}/${p.positional[1]} patched\n`;
}

/** `cordon|uncordon NODE`. */
async function cordon(api: Cluster, on: boolean, args: string[]): Promise<string | undefined> {
  if (args.length !== 1 || args[0]!.startsWith('-')) return undefined;
  await api.request('PATCH', `/api/v1/nodes/${encodeURIComponent(args[0]!)}`, { spec: { unschedulable: on ? true : null } }, PATCH_TYPES.merge, NO_RETRY);
  return `node/${args[0]} ${on ? 'cordoned' : 'uncordoned'}\n`;
}

/**
 * `apply -f FILE` of a JSON file (a List, as applyObjects writes): each object made, or patched with what the file says
 * (a strategic merge, a JSON merge for a custom resource), under kubectl's client-side manager: an update, never an
 * apply that could conflict with what a stack applied server-side. Fields the file no longer names are not removed.
 */
async function apply(api: Cluster, args: string[]): Promise<string | undefined> {
  const p = parse(args, ['-f'], ['-f']);
  const file = p?.flags.get('-f');
  if (!p || p.positional.length > 0 || !file?.endsWith('.json')) return undefined;
  const doc = JSON.parse(readFileSync(file, 'utf8')) as { kind?: string; items?: unknown[] };
  const objects = (doc.kind === 'List' ? doc.items ?? [] : [doc]) as Array<{ apiVersion: string; kind: string; metadata: { name: string; namespace?: string } }>;
  const resources = await Promise.all(objects.map((o) => resourceNamed(api, `${o.kind}|${o.apiVersion}`)));
  if (resources.some((r) => !r)) return undefined;
  const manager = '?fieldManager=kubectl-client-side-apply';
  const lines: string[] = [];
  for (const [i, o] of objects.entries()) {
    const r = resources[i]!;
    const path = objectPathOf(r, o.metadata.name, o.metadata.namespace ?? 'default');
    const made = await api.request('POST', `${path.slice(0, path.lastIndexOf('/'))}${manager}`, o, undefined, NO_RETRY).then(
      () => true,
      (e: { status?: number }) => (e.status === 409 ? false : Promise.reject(e)),
    );
    if (!made) {
      const patchAs = (type: string) => api.request('PATCH', `${path}${manager}`, o, type, NO_RETRY);
      // A custom resource takes no strategic merge (415): a JSON merge then, as kubectl does.
      await patchAs(PATCH_TYPES.strategic!).catch((e: { status?: number }) => (e.status === 415 ? patchAs(PATCH_TYPES.merge) : Promise.reject(e)));
    }
    lines.push(`${r.display}/${o.metadata.name} ${made ? 'created' : 'configured'}\n`);
  }
  return lines.join('');
}

/**
 * `get KIND [NAME] [-n NS | -A] [-l SEL] [--field-selector SEL]` as `-o json` prints it (a list's items with their kind);
 * undefined for any other form. Not retried, as kubectl is not.
 */
export async function getJsonInProcess(api: () => Promise<Cluster>, args: string[]): Promise<unknown> {
  const p = parse(args, ['-A', '-l', '--field-selector'], ['-l', '--field-selector']);
  if (!p || p.positional.length < 1 || p.positional.length > 2 || (p.positional[1] && p.flags.has('-A'))) return undefined;
  const [kind, name] = p.positional as [string, string | undefined];
  if (kind.includes(',') || kind.includes('/')) return undefined;
  const cluster = await api();
  const r = await resourceNamed(cluster, kind);
  if (!r) return undefined;
  const query = new URLSearchParams();
  if (p.flags.has('-l')) query.set('labelSelector', p.flags.get('-l')!);
  if (p.flags.has('--field-selector')) query.set('fieldSelector', p.flags.get('--field-selector')!);
  const qs = query.size ? `?${query}` : '';
  if (name) return cluster.get(`${objectPathOf(r, name, p.namespace)}${qs}`, NO_RETRY);
  const collection = `${r.group}${r.namespaced && !p.flags.has('-A') ? `/namespaces/${encodeURIComponent(p.namespace)}` : ''}/${r.plural}`;
  const list = await cluster.get<{ kind: string; apiVersion: string; items: Array<Record<string, unknown>> }>(`${collection}${qs}`, NO_RETRY);
  const item = { apiVersion: list.apiVersion, kind: list.kind.replace(/List$/, '') };
  return { ...list, items: list.items.map((i) => ({ ...item, ...i })) };
}

/** kubectl's output for the forms it knows, done in this process; undefined for any other (kubectl runs then). */
export async function kubectlInProcess(api: () => Promise<Cluster>, args: string[]): Promise<string | undefined> {
  // -n before the verb, as the tests often write it.
  const at = args[0] === '-n' ? 2 : 0;
  const [verb, ...rest] = [args[at], ...args.slice(0, at), ...args.slice(at + 1)] as [string | undefined, ...string[]];
  switch (verb) {
    case 'delete':
      return del(await api(), rest);
    case 'label':
      return mark(await api(), 'labels', rest);
    case 'annotate':
      return mark(await api(), 'annotations', rest);
    case 'patch':
      return patch(await api(), rest);
    case 'cordon':
    case 'uncordon':
      return cordon(await api(), verb === 'cordon', rest);
    case 'apply':
      return apply(await api(), rest);
    default:
      return undefined;
  }
}
