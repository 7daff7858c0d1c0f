import { connect } from 'node:net';

// What ssh-agent holds, asked as `ssh-add -l` asks it (the agent protocol's REQUEST_IDENTITIES), only to say why a
// login was refused: ssh2 drops the keys it cannot use (certificates among them) without a word.
const REQUEST_IDENTITIES = 11;
const IDENTITIES_ANSWER = 12;

/** The type of each key the agent at `socket` holds (`ssh-ed25519`, `ssh-ed25519-cert-v01@openssh.com`, ...). */
export function agentKeyTypes(socket: string, timeoutMs = 2_000): Promise<string[] | undefined> {
  return new Promise((resolve) => {
    const conn = connect(socket);
    let data = Buffer.alloc(0);
    const done = (types: string[] | undefined) => {
      conn.destroy();
      resolve(types);
    };
    conn.setTimeout(timeoutMs, () => done(undefined));
    conn.on('error', () => done(undefined));
    conn.on('connect', () => conn.write(Buffer.from([0, 0, 0, 1, REQUEST_IDENTITIES])));
    conn.on('data', (chunk) => {
      data = Buffer.concat([data, chunk]);
      if (data.length >= 4 && data.length >= 4 + data.readUInt32BE(0)) done(identityTypes(data.subarray(4, 4 + data.readUInt32BE(0))));
    });
  });
}

/** An IDENTITIES_ANSWER's keys: a count, then each key blob (whose first string is its type) and its comment. */
export function identityTypes(message: Buffer): string[] | undefined {
  if (message[0] !== IDENTITIES_ANSWER || message.length < 5) return undefined;
  const count = message.readUInt32BE(1);
  const types: string[] = [];
  let at = 5;
  const string = () => {
    if (at + 4 > message.length) return undefined;
    const length = message.readUInt32BE(at);
    const value = message.subarray(at + 4, at + 4 + length);
    at += 4 + length;
    return at <= message.length ? value : undefined;
  };
  for (let i = 0; i < count; i++) {
    const blob = string();
    if (blob === undefined || string() === undefined || blob.length < 4) return undefined;
    types.push(blob.subarray(4, 4 + blob.readUInt32BE(0)).toString('latin1'));
  }
  return types;
}
