import type { IncomingMessage, Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Cluster } from '../../../src/cluster/api.js';
import { requirePermissions, upgradePermissions } from '../../../src/cluster/permissions.js';
import { loopbackApi } from './loopback-api.js';

const bodyOf = (req: IncomingMessage) =>
  new Promise<any>((resolve) => {
    let text = '';
    req.on('data', (c: Buffer) => (text += c.toString()));
    req.on('end', () => resolve(JSON.parse(text || '{}')));
  });

// An apiserver that answers SelfSubjectAccessReviews as RBAC would for a role without some rules.
describe('the permissions a run needs, asked before it starts', () => {
  let server: Server;
  let kubeconfig: string;
  let denied: (attrs: any) => boolean = () => false;
  let status = 201;

  beforeAll(async () => {
    ({ server, kubeconfig } = await loopbackApi(async (req, res) => {
      const review = await bodyOf(req);
      if (status !== 201) return void res.writeHead(status, { 'Content-Type': 'application/json' }).end(JSON.stringify({ kind: 'Status', code: status, message: 'selfsubjectaccessreviews is forbidden' }));
      const attrs = review.spec.resourceAttributes;
      res.writeHead(201, { 'Content-Type': 'application/json' }).end(JSON.stringify({ ...review, status: { allowed: !denied(attrs) } }));
    }));
  });
  afterAll(() => server.close());

  it('passes when every one is allowed', async () => {
    denied = () => false;
    await expect(requirePermissions(await Cluster.connect({ kubeconfig }), upgradePermissions('kube-system', false), 'u')).resolves.toBeUndefined();
  });

  it('refuses (exit 10) naming each missing one', async () => {
    denied = (a) => a.subresource === 'eviction' || (a.resource === 'leases' && a.verb === 'update');
    const refused = requirePermissions(await Cluster.connect({ kubeconfig }), upgradePermissions('kube-system', false), "the kubeconfig's user sa");
    await expect(refused).rejects.toMatchObject({ code: 'preflight' });
    await expect(refused).rejects.toThrow("the kubeconfig's user sa lacks 2 permission(s) the run needs: create pods/eviction, update leases.coordination.k8s.io in kube-system; nothing was changed");
  });

  it('asks for Calico\'s records only where the cluster has Calico', () => {
    expect(upgradePermissions('kube-system', false).some((p) => p.group === 'crd.projectcalico.org')).toBe(false);
    // A node's audit lists the affinities and reads its blocks by name: never every block or handle.
    expect(upgradePermissions('kube-system', true).filter((p) => p.group === 'crd.projectcalico.org').map((p) => `${p.verb} ${p.resource}`)).toEqual(['list blockaffinities', 'get ipamblocks']);
  });

  it('fails closed when the reviews cannot be sent', async () => {
    status = 403;
    const refused = requirePermissions(await Cluster.connect({ kubeconfig }), upgradePermissions('kube-system', false), 'u');
    await expect(refused).rejects.toMatchObject({ code: 'preflight' });
    await expect(refused).rejects.toThrow(/could not check what u may do \(SelfSubjectAccessReview failed: POST .*403/);
    status = 201;
  });
});
