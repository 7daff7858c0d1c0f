// Pulumi's floor for bench:fleet: as many dynamic resources as the fleet has nodes, in the same waves (each waits for
// the wave before it), each with a node name and a target and nothing else, a provider that does nothing. What no
// fleet program can go under on the same machine: the engine, the SDK and the dynamic provider per resource.
import * as pulumi from '@pulumi/pulumi';

// As the fleet's program does (program.ts): no stack trace captured for every promise and resource.
Error.stackTraceLimit = 0;

const count = Number(process.env.BENCH_NODES ?? 1000);
const perWave = 50;
const provider = {
  check: async (_olds, news) => ({ inputs: news }),
  diff: async () => ({ changes: true }),
  create: async (inputs) => ({ id: inputs.node, outs: inputs }),
};

class Nothing extends pulumi.dynamic.Resource {
  constructor(name, args, opts) {
    super(provider, name, { ...args, result: undefined }, opts);
  }
}

let previous = [];
for (let first = 0; first < count; first += perWave) {
  previous = Array.from({ length: Math.min(perWave, count - first) }, (_, i) => {
    const node = `node-${first + i}`;
    return new Nothing(node, { node, targets: { containerd: '1.7' } }, { dependsOn: previous });
  });
}
