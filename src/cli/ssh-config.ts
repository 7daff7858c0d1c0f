import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { hostname, userInfo } from 'node:os';
import { dirname, isAbsolute, join } from 'node:path';
import SSHConfig from 'ssh-config';
import { usageError } from '../errors.js';

// What the operator's ~/.ssh/config says of a host, read as OpenSSH reads it (ssh_config(5)): the first value of a
// keyword wins, `Include` (globs, relative to ~/.ssh) is read where it stands, `Host` and `Match` blocks apply by
// their patterns; and a clear refusal of what this tool cannot honour (a ProxyCommand, a chain of jumps, a user
// certificate, a `Match exec` it would have to run), never a silent skip. ssh-config parses; the rules are here.

export interface SshConfigEntry {
  hostName?: string;
  user?: string;
  port?: string;
  /** Every IdentityFile, in order, its tokens and ~ expanded. */
  identityFiles: string[];
  identitiesOnly: boolean;
  /** UserKnownHostsFile's first file. */
  knownHostsFile?: string;
  /** ProxyJump's one hop, read with its own entry, as the `ssh -W` that ProxyJump runs reads it. */
  jump?: JumpEntry;
}

/** The jump host: where it is and what its own entry says of keys and known_hosts. */
export interface JumpEntry extends Omit<SshConfigEntry, 'hostName' | 'port' | 'jump'> {
  host: string;
  port?: number;
}

/** What the command line already fixes, as `ssh -l USER -p PORT` would: it wins, and `Match user` sees it. */
export interface SshConfigContext {
  home: string;
  user?: string;
  port?: string;
}

type Line = { type: number; param: string; value: string | { val: string }[]; config?: Line[] };
type Values = Map<string, string[]>;

const REFUSED = ['ProxyCommand', 'CertificateFile', 'KnownHostsCommand'];
const MULTI = new Set(['identityfile']);
const MATCH_OK = new Set(['all', 'host', 'originalhost', 'user', 'localuser']);
const MAX_INCLUDE_DEPTH = 16;

/** The entry for `name` in the config file at `path` (empty when there is no file or nothing applies). */
export function sshConfigFor(path: string, name: string, context: SshConfigContext): SshConfigEntry {
  const values = readEntry(path, name, context);
  const one = (key: string) => values.get(key.toLowerCase())?.[0];
  for (const refused of REFUSED) {
    if (one(refused) !== undefined) throw usageError(`${path} gives ${name} a ${refused}, which this tool does not support: give --ssh-host, --ssh-port, --ssh-user, --ssh-key and --ssh-bastion instead`);
  }
  const hostName = one('HostName') && expandTokens(one('HostName')!, { h: name, '%': '%' }, path, 'HostName');
  const user = context.user ?? one('User');
  const port = context.port ?? one('Port');
  const tokens = { '%': '%', d: context.home, h: hostName ?? name, n: name, p: port ?? '22', r: user ?? 'root', u: localUser(), l: hostname().split('.')[0]!, i: String(process.getuid?.() ?? '') };
  const expandPath = (p: string, key: string) => expandTokens(p, tokens, path, key).replace(/^~(?=\/|$)/, context.home);
  const knownHosts = one('UserKnownHostsFile')?.split(/\s+/)[0];
  const jump = one('ProxyJump');
  return {
    ...(hostName ? { hostName } : {}),
    ...(user ? { user } : {}),
    ...(port ? { port } : {}),
    identityFiles: (values.get('identityfile') ?? []).filter((f) => f !== 'none').map((f) => expandPath(f, 'IdentityFile')),
    identitiesOnly: one('IdentitiesOnly')?.toLowerCase() === 'yes',
    ...(knownHosts && knownHosts !== 'none' ? { knownHostsFile: expandPath(knownHosts, 'UserKnownHostsFile') } : {}),
    ...(jump && jump.toLowerCase() !== 'none' ? { jump: jumpEntry(path, jump, context.home, name) } : {}),
  };
}

/**
 * A jump host ([user@]host[:port], from ProxyJump or --ssh-bastion) with what its own entry says (an inline user or
 * port wins); a chain is refused by name. `of`: the node whose ProxyJump it is (absent: --ssh-bastion).
 */
export function jumpEntry(path: string, spec: string, home: string, of?: string): JumpEntry {
  const hops = of ? `${path} gives ${of} a ProxyJump of more than one hop (${spec})` : `--ssh-bastion ${spec} is more than one hop`;
  if (spec.includes(',')) throw usageError(`${hops}, which this tool does not support: one bastion only`);
  const { host, port, user } = parseUserHostPort(spec.replace(/^ssh:\/\//, ''));
  const { hostName, port: ownPort, jump, ...own } = sshConfigFor(path, host, { home, ...(user ? { user } : {}), ...(port ? { port: String(port) } : {}) });
  if (jump) throw usageError(`${path} gives ${of ? `${of}'s` : 'the'} jump host ${host} a ProxyJump of its own (a chain of jumps), which this tool does not support: one bastion only`);
  return { ...own, host: hostName ?? host, ...(ownPort ? { port: Number(ownPort) } : {}) };
}

/** [user@]host[:port], as ProxyJump and --ssh-bastion take it. */
export function parseUserHostPort(spec: string): { host: string; port?: number; user?: string } {
  const at = spec.lastIndexOf('@');
  const [host = '', port] = spec.slice(at + 1).split(':');
  return { host, ...(port ? { port: Number(port) } : {}), ...(at > 0 ? { user: spec.slice(0, at) } : {}) };
}

/** Every keyword's values that apply to `name`, in the order OpenSSH takes them (the first one wins). */
function readEntry(path: string, name: string, context: SshConfigContext): Values {
  const values: Values = new Map();
  if (!existsSync(path)) return values;
  const target = () => ({ host: values.get('hostname')?.[0] ?? name, user: context.user ?? values.get('user')?.[0] ?? 'root' });
  const set = (line: Line) => {
    const key = line.param.toLowerCase();
    const value = Array.isArray(line.value) ? line.value.map((v) => v.val).join(' ') : line.value;
    if (MULTI.has(key)) values.set(key, [...(values.get(key) ?? []), value]);
    else if (!values.has(key)) values.set(key, [value]);
  };
  const walk = (file: string, lines: Line[], active: boolean, depth: number): void => {
    for (const line of lines) {
      if (line.type !== SSHConfig.DIRECTIVE) continue;
      const key = line.param.toLowerCase();
      if (key === 'host') walk(file, line.config ?? [], active && patternList(words(line), name), depth);
      else if (key === 'match') walk(file, line.config ?? [], active && matches(file, words(line), name, target()), depth);
      else if (key === 'include') {
        if (depth >= MAX_INCLUDE_DEPTH) throw usageError(`${file}: Include nested deeper than ${MAX_INCLUDE_DEPTH} files`);
        // A block that does not apply reads nothing of what it includes (OpenSSH: SSHCONF_NEVERMATCH).
        if (!active) continue;
        for (const included of includes(file, String(line.value), context.home)) walk(included, parse(included), true, depth + 1);
      } else if (active) set(line);
    }
  };
  walk(path, parse(path), true, 0);
  return values;
}

function parse(file: string): Line[] {
  return SSHConfig.parse(readFileSync(file, 'utf8')) as unknown as Line[];
}

function words(line: Line): string[] {
  return Array.isArray(line.value) ? line.value.map((v) => v.val) : String(line.value).split(/\s+/);
}

/** The files an Include names: ~ expanded, relative ones under ~/.ssh, globs in any part, sorted as glob(3) sorts. */
function includes(file: string, spec: string, home: string): string[] {
  return spec.split(/\s+/).filter(Boolean).flatMap((p) => {
    const full = p.replace(/^~(?=\/)/, home);
    return glob(isAbsolute(full) ? full : join(home, '.ssh', full)).filter((f) => f !== file);
  });
}

function glob(pattern: string): string[] {
  let found = ['/'];
  for (const part of pattern.split('/').filter(Boolean)) {
    if (!/[*?[]/.test(part)) {
      found = found.map((dir) => join(dir, part)).filter((p) => existsSync(p));
      continue;
    }
    const re = globRegExp(part, true);
    found = found.flatMap((dir) => {
      try {
        return readdirSync(dir).filter((e) => re.test(e) && !e.startsWith('.')).sort().map((e) => join(dir, e));
      } catch {
        return [];
      }
    });
  }
  return found.filter((f) => dirname(f) !== f);
}

/**
 * A pattern as a RegExp: `*` and `?` always; `[...]` and `[!...]` classes only for file globs (glob(3), as Include
 * reads them, case-sensitive). A host pattern knows no classes and ignores case, as ssh's match_pattern.
 */
function globRegExp(pattern: string, files = false): RegExp {
  let body = '';
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i]!;
    const end = files && c === '[' ? pattern.indexOf(']', i + 2) : -1;
    if (c === '*') body += '.*';
    else if (c === '?') body += '.';
    else if (end > 0) {
      const set = pattern.slice(i + 1, end).replace(/\\/g, '\\\\');
      body += set.startsWith('!') ? `[^${set.slice(1)}]` : `[${set}]`;
      i = end;
    } else body += c.replace(/[.+^${}()|[\]\\]/g, '\\$&');
  }
  return new RegExp(`^${body}$`, files ? '' : 'i');
}

/** OpenSSH's pattern list: one positive pattern matches and no negated one (`!pattern`) does. */
function patternList(patterns: string[], subject: string): boolean {
  let matched = false;
  for (const p of patterns.flatMap((w) => w.split(','))) {
    const negated = p.startsWith('!');
    if (globRegExp(negated ? p.slice(1) : p).test(subject)) {
      if (negated) return false;
      matched = true;
    }
  }
  return matched;
}

/** A Match line's criteria, all of which must hold; one this tool cannot evaluate without running it is refused. */
function matches(file: string, criteria: string[], original: string, target: { host: string; user: string }): boolean {
  let result = true;
  for (let i = 0; i < criteria.length; i++) {
    const word = criteria[i]!;
    const negated = word.startsWith('!');
    const criterion = (negated ? word.slice(1) : word).toLowerCase();
    if (!MATCH_OK.has(criterion)) throw usageError(`${file} has a \`Match ${criterion}\`, which this tool does not evaluate (it honours Match all, host, originalhost, user and localuser): give the node's --ssh-* flags instead`);
    if (criterion === 'all') continue;
    const arg = criteria[++i];
    if (arg === undefined) throw usageError(`${file}: Match ${criterion} needs an argument`);
    const subject = { host: target.host, originalhost: original, user: target.user, localuser: localUser() }[criterion]!;
    if (patternList(arg.split(','), subject) === negated) result = false;
  }
  return result;
}

/** ssh_config(5)'s %-tokens and ${ENV}; one this tool does not know is refused by name, never left in a path. */
function expandTokens(value: string, tokens: Record<string, string>, file: string, key: string): string {
  return value
    .replace(/%(.)/g, (_, t: string) => {
      if (tokens[t] === undefined) throw usageError(`${file}: ${key} ${value} uses %${t}, which this tool does not expand (it knows %${Object.keys(tokens).join(' %')})`);
      return tokens[t]!;
    })
    .replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g, (_, env: string) => {
      const v = process.env[env];
      if (v === undefined) throw usageError(`${file}: ${key} ${value} names the environment variable ${env}, which is not set`);
      return v;
    });
}

function localUser(): string {
  try {
    return userInfo().username;
  } catch {
    return process.env.USER ?? '';
  }
}
