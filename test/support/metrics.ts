import { eagerFallbacks } from '../../src/observability/metrics';

/**
 * The Prometheus text format, read back: every sample by `name{label="value",...}` with its
 * labels sorted, so that a test can name a series whatever order the exporter wrote them in.
 */
export type Samples = Map<string, number>;

/** `name` and labels as one key, labels sorted by name. */
export function series(name: string, labels: Record<string, string | number> = {}): string {
  const parts = Object.keys(labels)
    .sort()
    .map((key) => `${key}="${String(labels[key])}"`);
  return parts.length ? `${name}{${parts.join(',')}}` : name;
}

const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+\d+)?$/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;

export function parseMetrics(text: string): Samples {
  const samples: Samples = new Map();
  for (const line of text.split('\n')) {
    if (!line.trim() || line.startsWith('#')) continue;
    const match = SAMPLE.exec(line.trim());
    if (!match) throw new Error(`not a Prometheus sample line: ${line}`);
    const labels: Record<string, string> = {};
    for (const [, key, value] of (match[2] ?? '').matchAll(LABEL)) labels[key!] = value!;
    samples.set(series(match[1]!, labels), Number(match[3]));
  }
  return samples;
}

/** GETs a metrics endpoint and parses it (a 200 in the Prometheus text format, or it throws). */
export async function scrape(url: string): Promise<Samples> {
  const response = await fetch(url);
  const text = await response.text();
  if (response.status !== 200) throw new Error(`${url} answered ${response.status}: ${text}`);
  if (!response.headers.get('content-type')?.startsWith('text/plain')) {
    throw new Error(`${url} is not the text format: ${response.headers.get('content-type')}`);
  }
  return parseMetrics(text);
}

/** How much a series grew between two scrapes (absent counts as 0). */
export function increase(before: Samples, after: Samples, key: string): number {
  return (after.get(key) ?? 0) - (before.get(key) ?? 0);
}

/** Payments of a type whose in-process report came too late (src/observability/metrics.ts). */
export async function missedReports(type: string): Promise<number> {
  const { values } = await eagerFallbacks.get();
  return values
    .filter((v) => v.labels.type === type && v.labels.reason === 'settlement_wait')
    .reduce((n, v) => n + v.value, 0);
}

/**
 * Makes a payment of `type` until its own worker's report answered it, up to three: on a loaded
 * machine the report may miss its deadline and the payment then goes through the server (an
 * update, or a wait on its result), which changes its history. Answers the last one made.
 */
export async function reportedInProcess<T>(type: string, make: () => Promise<T>): Promise<T> {
  let made: T | undefined;
  for (let tries = 0; tries < 3; tries += 1) {
    const missedBefore = await missedReports(type);
    made = await make();
    if ((await missedReports(type)) === missedBefore) break;
  }
  return made!;
}
