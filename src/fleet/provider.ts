import type * as pulumi from '@pulumi/pulumi';

// The dynamic provider for one node's runtime upgrade. Pulumi serializes it into every resource's inputs and runs it
// in a separate process: it captures nothing but the library's URL (a string) and loads the library (node-provider.ts,
// where all it does is written) inside its methods. Kept this small because its text goes with each of the fleet's
// nodes: at 1,000 nodes, a larger provider was a measurable part of `pulumi preview`.
export function nodeUpgradeProvider(libraryUrl: string): pulumi.dynamic.ResourceProvider {
  const lib = () => import(libraryUrl);
  return {
    check: async (olds, news) => (await lib()).check(olds, news),
    diff: async (id, olds, news) => (await lib()).diff(id, olds, news),
    create: async (inputs) => (await lib()).create(inputs),
    update: async (id, olds, news) => (await lib()).update(id, olds, news),
    // Taking a node out of the fleet's config leaves the node as it is.
    delete: async () => undefined,
  };
}
