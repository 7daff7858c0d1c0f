// npm run bench: every benchmark, one after another, each printing its figures.
await import('./audit-node.mjs');
await import('./fleet-preview.mjs');
await import('./drain.mjs');
await import('./scale.mjs');
await import('./agents-idle.mjs');
