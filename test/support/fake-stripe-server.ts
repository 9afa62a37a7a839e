import http from 'node:http';
import type { AddressInfo } from 'node:net';
import busboy from 'busboy';

/**
 * What the fake Stripe APIs share: a loopback server in Stripe's wire format (bearer key, form or
 * multipart bodies with bracketed keys, `Idempotency-Key` per `Stripe-Account` answering the same
 * response, Stripe's error body), faults on demand; every request recorded.
 */

export type FakeStripeRequest = {
  method: string;
  path: string;
  headers: http.IncomingHttpHeaders;
  /** The form fields, nested by their brackets (`individual[dob][day]` → individual.dob.day). */
  form: Record<string, unknown>;
  /** The multipart file of a files request. */
  file?: { content: Buffer; filename: string };
};

export type Answer = { status: number; body: unknown };

export function nestForm(pairs: Iterable<[string, string]>): Record<string, unknown> {
  const root: Record<string, unknown> = {};
  for (const [key, value] of pairs) {
    const path = key.replace(/\]/g, '').split('[');
    let node = root;
    for (const part of path.slice(0, -1)) {
      node[part] ??= {};
      node = node[part] as Record<string, unknown>;
    }
    node[path[path.length - 1]!] = value;
  }
  return root;
}

/** Stripe's error body. */
export const stripeError = (
  status: number,
  type: string,
  message: string,
  code?: string,
): Answer => ({
  status,
  body: { error: { type, message, ...(code ? { code } : {}) } },
});

export abstract class FakeStripeServer {
  readonly requests: FakeStripeRequest[] = [];
  abstract readonly secretKey: string;
  private readonly replies = new Map<string, Answer>();
  private readonly faults: number[] = [];
  private counter = 0;
  private server: http.Server | undefined;

  /** Starts `fake` listening; its answers come from its `route`. */
  protected static async listen<T extends FakeStripeServer>(fake: T): Promise<T> {
    const server = http.createServer();
    fake.server = server;
    server.on('request', (req, res) => {
      fake.handle(req, res).catch((e: unknown) => {
        res.writeHead(500, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: { type: 'api_error', message: String(e) } }));
      });
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => resolve());
    });
    return fake;
  }

  get api(): { host: string; port: number; protocol: 'http' } {
    return {
      host: '127.0.0.1',
      port: (this.server!.address() as AddressInfo).port,
      protocol: 'http',
    };
  }

  /** The next `n` requests answer this status (a 5xx: Stripe is down; 429: rate limited). */
  failNext(n: number, status: number): void {
    for (let i = 0; i < n; i += 1) this.faults.push(status);
  }

  requestsTo(method: string, pattern: RegExp): FakeStripeRequest[] {
    return this.requests.filter((r) => r.method === method && pattern.test(r.path));
  }

  close(): Promise<void> {
    return new Promise((resolve) => this.server!.close(() => resolve()));
  }

  protected nextId(prefix: string): string {
    this.counter += 1;
    return `${prefix}_fake${String(this.counter).padStart(6, '0')}`;
  }

  /** The answer of an authenticated request that is not a fault nor a replay. */
  protected abstract route(request: FakeStripeRequest): Answer;

  private async read(req: http.IncomingMessage): Promise<FakeStripeRequest> {
    const recorded: FakeStripeRequest = {
      method: req.method ?? 'GET',
      path: (req.url ?? '/').split('?')[0]!,
      headers: req.headers,
      form: {},
    };
    if (String(req.headers['content-type']).startsWith('multipart/form-data')) {
      const pairs: Array<[string, string]> = [];
      await new Promise<void>((resolve, reject) => {
        const parser = busboy({ headers: req.headers });
        parser.on('field', (name, value) => pairs.push([name, value]));
        parser.on('file', (_name, stream, info) => {
          const chunks: Buffer[] = [];
          stream.on('data', (chunk: Buffer) => chunks.push(chunk));
          stream.on('end', () => {
            recorded.file = { content: Buffer.concat(chunks), filename: info.filename };
          });
        });
        parser.on('close', resolve);
        parser.on('error', reject);
        req.pipe(parser);
      });
      recorded.form = nestForm(pairs);
    } else {
      const chunks: Buffer[] = [];
      for await (const chunk of req) chunks.push(chunk as Buffer);
      const text = Buffer.concat(chunks).toString('utf8');
      const query = (req.url ?? '').split('?')[1] ?? '';
      recorded.form = nestForm(new URLSearchParams(text || query));
    }
    return recorded;
  }

  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const request = await this.read(req);
    this.requests.push(request);
    const answer = this.answer(request);
    res.writeHead(answer.status, { 'content-type': 'application/json', 'request-id': 'req_fake' });
    res.end(JSON.stringify(answer.body));
  }

  private answer(request: FakeStripeRequest): Answer {
    if (request.headers.authorization !== `Bearer ${this.secretKey}`) {
      return stripeError(401, 'invalid_request_error', 'Invalid API Key provided');
    }
    const fault = this.faults.shift();
    if (fault !== undefined) {
      return fault === 429
        ? stripeError(429, 'invalid_request_error', 'Too many requests', 'rate_limit')
        : stripeError(fault, 'api_error', 'Something went wrong on our end');
    }
    const key = request.headers['idempotency-key'];
    if (request.method === 'POST' && typeof key === 'string') {
      const scoped = `${String(request.headers['stripe-account'] ?? '')}:${key}`;
      const earlier = this.replies.get(scoped);
      if (earlier) return earlier;
      const answer = this.route(request);
      if (answer.status < 500) this.replies.set(scoped, answer);
      return answer;
    }
    return this.route(request);
  }
}
