/**
 * Row (6): every transfer's event must reach a loopback endpoint; throughput counts distinct
 * events, latency runs from the money movement (the event's `created_at`, written in the
 * transfer's own database transaction) to the delivery's arrival.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { progress } from './engine';
import { percentile, type LoadResult } from './load';
import { failure, type HttpClient } from './senders';

/** How long deliveries may trail the last transfer before the missing ones count as errors. */
const DRAIN_MS = 30_000;

export async function webhookDeliveries(options: {
  /** Subscribes the endpoint. */
  api: HttpClient;
  /** Runs the transfers, open model, and answers their result. */
  transfers: () => Promise<LoadResult>;
  signal: AbortSignal;
}): Promise<LoadResult> {
  const arrivals = new Map<string, number>();
  const server = http.createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const at = Date.now();
      try {
        const payload = JSON.parse(Buffer.concat(chunks).toString('utf8')) as {
          id: string;
          created_at: string;
        };
        if (!arrivals.has(payload.id)) {
          arrivals.set(payload.id, at - Date.parse(payload.created_at));
        }
      } catch {
        // Not a delivery: ignored.
      }
      response.statusCode = 204;
      response.end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  try {
    const subscription = await options.api.post('/api/v1/webhooks/subscriptions', {
      url: `http://127.0.0.1:${port}/bench`,
      events: ['transfer.completed'],
    });
    if (subscription.status !== 201) throw failure('subscribe', subscription);
    const started = performance.now();
    const transfers = await options.transfers();
    progress(
      `   transfers meanwhile: ${transfers.throughput.toFixed(1)}/s, p50 ${transfers.p50.toFixed(1)} ms, errors ${transfers.errors}`,
    );
    const until = Date.now() + DRAIN_MS;
    let lastCount = -1;
    let lastChange = performance.now();
    while (arrivals.size < transfers.ok && Date.now() < until && !options.signal.aborted) {
      if (arrivals.size !== lastCount) {
        lastCount = arrivals.size;
        lastChange = performance.now();
      }
      await sleep(20);
    }
    const finished = arrivals.size >= transfers.ok ? performance.now() : lastChange;
    const delays = [...arrivals.values()].sort((a, b) => a - b);
    const missing = Math.max(0, transfers.ok - arrivals.size);
    return {
      sent: transfers.ok,
      ok: arrivals.size,
      errors: missing,
      errorKinds: missing ? { 'not delivered within 30 s of the last transfer': missing } : {},
      throughput: arrivals.size / ((finished - started) / 1000),
      p50: percentile(delays, 50),
      p99: percentile(delays, 99),
      max: delays.at(-1) ?? Number.NaN,
      elapsed: (finished - started) / 1000,
    };
  } finally {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}
