import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

// A webhook receiver on loopback: what the fleet posted, in order.
export interface Message {
  event: string;
  node?: string;
  text: string;
  [key: string]: unknown;
}

export function webhookReceiver(): Promise<{ server: Server; url: string; messages: Message[] }> {
  const messages: Message[] = [];
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      messages.push(JSON.parse(body) as Message);
      res.writeHead(200).end('ok');
    });
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve({ server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`, messages })));
}
