/**
 * The API's resident memory during an export, by hand (not in `npm run bench`): flat at any size.
 *   EXPORT_URL=http://127.0.0.1:8000 API_KEY=... SECRET_KEY=... API_PID=1234 \
 *     node --import tsx tools/bench/export-memory.ts [query]
 */
import { residentBytes } from './rss';

function required(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set`);
  return value;
}

async function main(): Promise<void> {
  const base = required('EXPORT_URL');
  const pid = required('API_PID');
  const query = process.argv[2] ?? '';
  const start = residentBytes(pid);
  let highest = start;
  const sampler = setInterval(() => {
    highest = Math.max(highest, residentBytes(pid));
  }, 100);
  const started = performance.now();
  const response = await fetch(`${base}/api/v1/transactions/export?${query}`, {
    headers: { 'api-key': required('API_KEY'), 'secret-key': required('SECRET_KEY') },
  });
  if (response.status !== 200) throw new Error(`${response.status}: ${await response.text()}`);
  let bytes = 0;
  let lines = 0;
  for await (const chunk of response.body!) {
    const buffer = chunk as Uint8Array;
    bytes += buffer.length;
    for (const byte of buffer) if (byte === 10) lines++;
  }
  clearInterval(sampler);
  const mb = (n: number) => `${(n / 1024 / 1024).toFixed(1)} MB`;
  console.log(
    JSON.stringify({
      lines: lines - 1,
      bytes: mb(bytes),
      seconds: ((performance.now() - started) / 1000).toFixed(1),
      rss_start: mb(start),
      rss_highest: mb(highest),
    }),
  );
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
