import { randomInt } from 'node:crypto';
import { readFileSync } from 'node:fs';
import net from 'node:net';

/** Below the kernel's range of source ports, which any outgoing connection may take. */
const LOWEST = 10_000;
const ATTEMPTS = 20;

/** The first port the kernel hands out as a connection's source port. */
function ephemeralLow(): number {
  try {
    const low = Number(
      readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').split(/\s+/)[0],
    );
    return Number.isInteger(low) && low > 0 ? low : 32_768;
  } catch {
    return 32_768;
  }
}

/** Whether `port` (0: any) can be bound on 127.0.0.1 now; the port bound, or null. */
function bind(port: number): Promise<number | null> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', (error: NodeJS.ErrnoException) =>
      error.code === 'EADDRINUSE' || error.code === 'EACCES' ? resolve(null) : reject(error),
    );
    server.listen(port, '127.0.0.1', () => {
      const bound = (server.address() as net.AddressInfo).port;
      server.close(() => resolve(bound));
    });
  });
}

/**
 * A TCP port free on 127.0.0.1 right now, for a server started next. It is picked outside the
 * kernel's source-port range: a port from there can go to any connection before the server binds.
 */
export async function freePort(): Promise<number> {
  const low = ephemeralLow();
  if (low > LOWEST) {
    for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
      const port = await bind(randomInt(LOWEST, low));
      if (port !== null) return port;
    }
  }
  const port = await bind(0);
  if (port === null) throw new Error('no free TCP port on 127.0.0.1');
  return port;
}
