import { readFileSync } from 'node:fs';
import { loadAll } from 'js-yaml';

// The agent's objects as runbooks/agent/ ships them (its kustomization's resources, in that order: namespaces and
// the CRD first), for a stack that makes the agent and for the tests, which then apply exactly what a site applies.

export interface KubeObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  [field: string]: unknown;
}

const dir = new URL('../../runbooks/agent/', import.meta.url);

export function agentBundle(): KubeObject[] {
  const kustomization = loadAll(readFileSync(new URL('kustomization.yaml', dir), 'utf8'))[0] as { resources: string[] };
  return kustomization.resources.flatMap((file) => (loadAll(readFileSync(new URL(file, dir), 'utf8')) as KubeObject[]).filter(Boolean));
}
