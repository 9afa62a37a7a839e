import { readFileSync } from 'node:fs';
import net from 'node:net';
import { freePort } from '../../src/worker/ports';

/** Binds `port` on 127.0.0.1 and closes it again; rejects when the port is taken. */
function listenOnce(port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => server.close(() => resolve()));
  });
}

describe('freePort (src/worker/ports.ts)', () => {
  it('answers a port that can be bound, below the kernel source-port range', async () => {
    const low = Number(
      readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').split(/\s+/)[0],
    );
    const ports = [await freePort(), await freePort(), await freePort()];
    for (const port of ports) {
      expect({ port, below: port >= 10_000 && port < low }).toEqual({ port, below: true });
      await listenOnce(port);
    }
  });
});
