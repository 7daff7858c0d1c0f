import { createRequire } from 'node:module';
import { connect } from 'node:net';
import { StopSource } from '../stop.js';

// The dynamic provider's process as `pulumi up` leaves it to itself. The Node.js provider host answers the engine's
// Cancel (a Ctrl-C or SIGTERM on `pulumi up`) with nothing, and keeps serving when its `pulumi` is gone (SIGKILL, a
// closed terminal): this module hears both, stops the nodes' runs at their next safe point (src/stop.ts), and
// ends the process once its `pulumi` is gone and its runs have stopped. Nothing is written to a reader that is gone.

export const CANCELLED = 'a Ctrl-C or SIGTERM on `pulumi up`';
export const PULUMI_GONE = 'the end of its `pulumi` process';
/** How often the engine is looked for: within 10 s of its end, the runs stop. */
const PROBE_MS = 3_000;
/** A provider never outlives its `pulumi` by more than a minute, however a run's stop goes. */
const EXIT_BACKSTOP_MS = 45_000;
const CANCEL_PATH = '/pulumirpc.ResourceProvider/Cancel';

export interface ProviderProcess {
  /** Aborted by the engine's Cancel or the end of `pulumi`; the reason says which. */
  stop: AbortSignal;
  /** A line to the engine through stderr; dropped once nobody reads it. */
  log: (line: string) => void;
  /** A node's run under way in this process: the process ends only when none is left. */
  track<T>(work: Promise<T>): Promise<T>;
}

let watched: ProviderProcess | undefined;

/** The one watch of this process, started by the first node's run (never at import: tests import the provider). */
export function providerProcess(): ProviderProcess {
  watched ??= watch();
  return watched;
}

function watch(): ProviderProcess {
  const stop = new StopSource();
  let readerGone = false;
  let running = 0;
  let gone = false;
  const exitWhenIdle = () => {
    if (gone && running === 0) process.exit(0);
  };
  const pulumiGone = (why: string) => {
    if (gone) return;
    gone = true;
    log(`node-maint: ${why}: stopping this provider's runs at their next safe point, then exiting`);
    stop.ask(PULUMI_GONE);
    setTimeout(() => process.exit(0), EXIT_BACKSTOP_MS).unref();
    exitWhenIdle();
  };
  const log = (line: string) => {
    if (readerGone) return;
    process.stderr.write(`${line}\n`);
  };
  // A write to a pipe nobody reads fails (EPIPE) asynchronously; unhandled, the host reports it by writing again.
  const dropped = () => {
    readerGone = true;
    pulumiGone('the engine no longer reads this provider\'s output');
  };
  process.stderr.on('error', dropped);
  process.stdout.on('error', dropped);
  // The engine closes its plugins with SIGINT, and SIGKILL 5 s later: at the end of every update (nothing runs then),
  // and when `pulumi` is terminated mid-update (a second Ctrl-C or SIGTERM). A run under way stops at once, writes its
  // journal and frees the Lease in those seconds, leaving a command already on the node to end there.
  const closing = (name: NodeJS.Signals) => {
    if (running === 0) process.exit(0);
    pulumiGone(`${name} from the engine closing this provider`);
    stop.hurry();
  };
  process.on('SIGINT', closing);
  process.on('SIGTERM', closing);
  const hears = hearEngineCancel(() => {
    if (stop.signal.aborted) return;
    // The engine also cancels its providers as every update ends: said only when a node is under way to hear it.
    if (running > 0) log(`node-maint: ${CANCELLED} (the engine's Cancel): no node starts; a node under way stops at its next safe point`);
    stop.ask(CANCELLED);
  });
  if (!hears) log('node-maint: cannot hear the engine\'s Cancel with this @grpc/grpc-js: a cancelled `pulumi up` lets the nodes under way finish');
  const parent = process.ppid;
  const engine = process.argv.slice(2).map(engineAddress).find((a) => a !== undefined);
  const probe = setInterval(() => {
    if (process.ppid !== parent) return pulumiGone(`its parent process ${parent} is gone`);
    if (engine) refused(engine).then((no) => no && pulumiGone(`the engine at ${engine.host}:${engine.port} refuses connections`), () => undefined);
  }, PROBE_MS);
  probe.unref();
  return {
    stop: stop.signal,
    log,
    async track(work) {
      running++;
      try {
        return await work;
      } finally {
        running--;
        exitWhenIdle();
      }
    },
  };
}

/** The engine's address the host was started with ("127.0.0.1:PORT", after any flags), or undefined. */
export function engineAddress(arg: string | undefined): { host: string; port: number } | undefined {
  const m = /^([\w.-]+):(\d{1,5})$/.exec(arg ?? '');
  return m ? { host: m[1]!, port: Number(m[2]) } : undefined;
}

/** True when nothing listens there any more (a refused connection): a slow engine is not a gone one. */
export function refused({ host, port }: { host: string; port: number }): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host, port });
    socket.setTimeout(2_000, () => (socket.destroy(), resolve(false)));
    socket.once('connect', () => (socket.destroy(), resolve(false)));
    socket.once('error', (e: NodeJS.ErrnoException) => resolve(e.code === 'ECONNREFUSED'));
  });
}

/**
 * Calls `onCancel` when the engine sends this process its gRPC Cancel. The host's own handler does nothing with it and
 * was bound before this module loaded, so the call is heard where grpc-js looks up a handler for each incoming call
 * (the same grpc-js the host runs, resolved from @pulumi/pulumi). false when grpc-js offers no such place.
 */
export function hearEngineCancel(onCancel: () => void): boolean {
  try {
    const fromPulumi = createRequire(createRequire(import.meta.url).resolve('@pulumi/pulumi'));
    const proto = (fromPulumi('@grpc/grpc-js') as { Server?: { prototype: Record<string, unknown> } }).Server?.prototype;
    const lookUp = proto?._retrieveHandler;
    if (!proto || typeof lookUp !== 'function') return false;
    proto._retrieveHandler = function (this: unknown, path: string, ...rest: unknown[]) {
      if (path === CANCEL_PATH) onCancel();
      return lookUp.call(this, path, ...rest);
    };
    return true;
  } catch {
    return false;
  }
}
