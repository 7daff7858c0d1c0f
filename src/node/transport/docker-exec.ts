import { RunbookError } from '../../errors.js';
import { runScript } from './process.js';
import type { ExecOptions, ExecResult, Transport } from './types.js';

export interface DockerExecOptions {
  container: string;
  /** DOCKER_HOST for the daemon that runs the node containers (kind's, or the test bed's own). */
  dockerHost?: string;
}

/**
 * Node access for nodes that are containers (kind): docker exec as root, no shell on this side. A killed docker
 * client leaves its exec running in the container: the remote shell's own timeout is what ends it.
 */
export class DockerExecTransport implements Transport {
  readonly target: string;
  private constructor(private readonly options: DockerExecOptions) {
    this.target = `docker exec ${options.container}`;
  }

  static async connect(options: DockerExecOptions): Promise<DockerExecTransport> {
    const transport = new DockerExecTransport(options);
    // The one way a script reaches a node: the probe is the smallest script.
    const probe = await transport.exec('true', { timeoutMs: 15_000 });
    if (probe.code !== 0) {
      throw new RunbookError('unreachable', `${transport.target}: ${probe.stderr.trim() || 'the container does not answer'}`);
    }
    return transport;
  }

  exec(script: string, options: ExecOptions = {}): Promise<ExecResult> {
    return runScript(this.target, (shell) => this.argv(['sh', '-c', shell]), script, { ...options, env: this.env() });
  }

  async close(): Promise<void> {}

  private argv(command: string[]): string[] {
    return ['docker', 'exec', '-i', '-u', '0', this.options.container, ...command];
  }

  private env(): NodeJS.ProcessEnv {
    return this.options.dockerHost ? { ...process.env, DOCKER_HOST: this.options.dockerHost } : process.env;
  }
}
