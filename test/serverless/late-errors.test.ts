import { request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Readable, Writable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import Koa from 'koa';
import { logLateErrors } from '../../src/api/middleware/errors';
import { createLogger } from '../../src/observability/logger';
import { pollUntil } from '../support/wait';

/**
 * What Koa reports once a response has begun reaches the engine's log, not Koa's stack trace on
 * stderr: a streamed body that fails is an error, a client that leaves is not.
 */
describe('errors after the response began', () => {
  let server: ReturnType<Koa['listen']>;
  let base: string;
  const lines: Record<string, unknown>[] = [];
  const consoleError = jest.spyOn(console, 'error');

  beforeAll(async () => {
    const app = new Koa();
    const logger = createLogger(
      'info',
      new Writable({
        write: (chunk: Buffer, _encoding, done) => {
          lines.push(JSON.parse(chunk.toString()) as Record<string, unknown>);
          done();
        },
      }),
    );
    logLateErrors(app, logger);
    app.use((ctx) => {
      // A body that sends one chunk, then fails or never ends (until the client leaves).
      const fails = ctx.path === '/fails';
      let reads = 0;
      ctx.body = new Readable({
        read() {
          reads += 1;
          if (reads === 1) this.push('first,chunk\n');
          if (reads === 2 && fails) {
            setTimeout(() => this.destroy(new Error('the rows could not be read')), 50);
          }
        },
      });
    });
    server = app.listen(0, '127.0.0.1');
    await new Promise((resolve) => server.once('listening', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });

  afterAll(async () => {
    consoleError.mockRestore();
    await new Promise((resolve) => server.close(resolve));
  });

  beforeEach(() => {
    lines.length = 0;
    consoleError.mockClear();
  });

  const logged = (msg: string) =>
    pollUntil(
      () => lines.filter((l) => l.msg === msg),
      (found) => found.length > 0,
      { timeoutMs: 2_000, intervalMs: 20 },
    );

  it('logs a streamed body that fails as an error, with its path', async () => {
    const body = await new Promise<string>((resolve) => {
      const req = request(`${base}/fails`, (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (text += chunk));
        res.on('close', () => resolve(text));
      });
      req.on('error', () => resolve(''));
      req.end();
    });
    expect(body).toBe('first,chunk\n');
    const [line] = await logged('response failed after it began');
    expect(line).toMatchObject({ level: 50, method: 'GET', path: '/fails' });
    expect((line!.err as { message: string }).message).toBe('the rows could not be read');
    // Koa reports it twice (the body's pipeline, then the response's end): logged once.
    await sleep(200);
    expect(lines).toHaveLength(1);
    expect(consoleError).not.toHaveBeenCalled();
  });

  it('logs a client that leaves mid-stream as information, not as an error', async () => {
    await new Promise<void>((resolve) => {
      const req = request(`${base}/endless`, (res) => {
        res.once('data', () => {
          req.destroy();
          resolve();
        });
      });
      req.on('error', () => undefined);
      req.end();
    });
    const [line] = await logged('client closed the connection before the response ended');
    expect(line).toMatchObject({
      level: 30,
      method: 'GET',
      path: '/endless',
      code: 'ERR_STREAM_PREMATURE_CLOSE',
    });
    await sleep(200);
    expect(lines).toHaveLength(1);
    expect(consoleError).not.toHaveBeenCalled();
  });
});
