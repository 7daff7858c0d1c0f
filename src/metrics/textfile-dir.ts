// Where node-exporter's textfile collector reads, as the operator names it: checked alike for the CLI's flag and the
// fleet's config, and the files written there (a module of its own, so the fleet's program does not load the audit).

export const AUDIT_TEXTFILE = 'node_maint_audit.prom';
export const RUN_TEXTFILE = 'node_maint_run.prom';

/** An absolute path of letters, digits, '.', '_', '-' and '/', with no '..': it goes into a remote shell's words. */
export const isTextfileDir = (dir: unknown): dir is string => typeof dir === 'string' && /^\/[A-Za-z0-9._/-]+$/.test(dir) && !dir.split('/').includes('..');
