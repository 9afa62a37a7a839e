import net from 'node:net';
import { silentEndpoint } from '../../tools/bench/backlog';

describe("row 3q's endpoint that never answers (tools/bench/backlog.ts)", () => {
  it('accepts the connection and the request, and answers nothing until the caller gives up', async () => {
    const endpoint = await silentEndpoint();
    try {
      const { port } = new URL(endpoint.url);
      const socket = net.connect(Number(port), '127.0.0.1');
      await new Promise<void>((resolve, reject) => {
        socket.once('connect', resolve).once('error', reject);
      });
      socket.destroy();

      const started = Date.now();
      const reply = await fetch(endpoint.url, {
        method: 'POST',
        body: '{}',
        signal: AbortSignal.timeout(300),
      }).then(
        () => 'answered',
        (error: unknown) => (error as { name?: string }).name,
      );
      expect(reply).toBe('TimeoutError');
      expect(Date.now() - started).toBeGreaterThanOrEqual(290);
    } finally {
      await endpoint.close();
    }
  });
});
