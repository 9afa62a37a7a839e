import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { updateApplication } from '../../src/db/applications';
import { RAISED_RATE_LIMITS } from '../../tools/harness/fixtures';
import { assertLedgerInvariant } from '../support/database';
import { useTestApp, useTestEngine } from '../support/hooks';

/**
 * The shell examples of the README and docs/api.md, run as a reader runs them, against a
 * throwaway engine (docs/testing.md, "The documentation's examples").
 */

const ROOT = path.join(__dirname, '..', '..');
/** The address the examples name: the one `npm start` serves. */
const DOCUMENTED_BASE = 'http://127.0.0.1:3000';

const engine = useTestEngine();
// The demo application `npm start` makes: SLE, Test Mode, the default rate limits.
const { app, api } = useTestApp(engine, { currency: 'SLE', rateLimits: null });

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'doc-examples-'));
  mkdirSync(path.join(dir, '.data'));
  const demo = {
    application_id: app.id,
    mode: 'test',
    api_key: app.credentials.test.apiKey,
    secret_key: app.credentials.test.secretKey,
  };
  writeFileSync(path.join(dir, '.data', 'demo-credentials.json'), JSON.stringify(demo));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

type Block = { at: string; code: string; statuses: string[] };

/** The ```sh blocks of a document, in order, but those after `<!-- not run: reason -->`. */
function shellBlocks(file: string): Block[] {
  const lines = readFileSync(path.join(ROOT, file), 'utf8').split('\n');
  const blocks: Block[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = /^(\s*)```(\S*)\s*$/.exec(lines[i] ?? '');
    if (!open) continue;
    let end = i + 1;
    while (end < lines.length && lines[end]?.trim() !== '```') end++;
    const before = lines.slice(0, i).findLast((line) => line.trim() !== '') ?? '';
    if (open[2] === 'sh' && !/^\s*<!-- not run: .+ -->$/.test(before)) {
      const code = lines.slice(i + 1, end).map((line) => line.slice((open[1] ?? '').length));
      blocks.push({
        at: `${file}:${i + 1}`,
        code: code.join('\n'),
        statuses: [...code.join('\n').matchAll(/HTTP\/1\.1 (\d{3})/g)].map(
          ([, status = '']) => status,
        ),
      });
    }
    i = end;
  }
  return blocks;
}

/**
 * Runs before the blocks: the CLI runs from the repository, as in a reader's terminal, and an
 * answer of 4xx or 5xx fails the run unless its block shows that status (`HTTP/1.1 422`).
 */
const PRELUDE = String.raw`
set -euo pipefail
npm() { (cd "$DOC_REPO" && command npm "$@"); }
curl() {
  command curl --write-out '%{stderr}%{http_code}\n' "$@" 2>>"$DOC_STATUSES" || return
  local status
  status=$(tail -n 1 "$DOC_STATUSES")
  if [ "$status" -ge 400 ] && [[ " $DOC_ALLOWED " != *" $status "* ]]; then
    echo "answered $status, which the block does not show" >&2
    return 1
  fi
}
`;

/** One bash session for the blocks, in order, so that their variables flow from one to the next. */
function runSession(
  blocks: Block[],
): Promise<{ code: number | null; at: string; stdout: string; stderr: string }> {
  const source = [
    PRELUDE,
    ...blocks.map((block) =>
      [
        `DOC_ALLOWED='${block.statuses.join(' ')}'`,
        `echo '::: ${block.at}' >&2`,
        block.code.replaceAll(DOCUMENTED_BASE, engine.url),
      ].join('\n'),
    ),
  ].join('\n');
  const child = spawn('bash', ['-c', source], {
    cwd: dir,
    env: {
      ...process.env,
      DATABASE_URL: engine.config.database.url,
      DATA_DIR: path.join(dir, '.data'),
      DOC_REPO: ROOT,
      DOC_STATUSES: path.join(dir, 'statuses'),
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code) => {
      const at = [...stderr.matchAll(/^::: (.+)$/gm)].at(-1)?.[1] ?? 'before the first block';
      resolve({ code, at, stdout: stdout.slice(-4000), stderr: stderr.slice(-2000) });
    });
  });
}

const README = () => shellBlocks('README.md');

/** The wallets' balances, smallest first. */
async function balances(): Promise<number[]> {
  const reply = await api.get<{ balance: number }[]>('/api/v1/wallets/?per_page=100');
  expect(reply.status).toBe(200);
  return reply.body.map((wallet) => wallet.balance).sort((a, b) => a - b);
}

async function count(query: string): Promise<number> {
  const reply = await api.get<{ total: number }>(`/api/v1/transactions/?${query}`);
  expect(reply.status).toBe(200);
  return reply.body.total;
}

describe('the documentation examples', () => {
  test('the README walk-through runs within the default rate limits, and runs again at once', async () => {
    expect(README().length).toBeGreaterThanOrEqual(6);
    expect(await runSession(README())).toMatchObject({ code: 0 });

    // A second run in the same minute is over the default limits, as the README says.
    await updateApplication(engine.pool, app.id, { rateLimits: RAISED_RATE_LIMITS });
    expect(await runSession(README())).toMatchObject({ code: 0 });

    // Each run: the deposit in, the transfer made once (the replay and the refusals moved
    // nothing), the card deposit to Bob and part of it refunded.
    expect(await balances()).toEqual([42.5, 42.5, 87.5, 87.5]);
    expect(await count('transaction_type=transfer')).toBe(2);
    expect(await count('transaction_type=card_deposit&status=completed')).toBe(2);
    expect(await count('transaction_type=card_refund&status=completed')).toBe(2);
    expect(await count('status=pending')).toBe(0);
    await assertLedgerInvariant(engine.pool);
  });

  test('every shell example of docs/api.md runs, after the README walk-through', async () => {
    await updateApplication(engine.pool, app.id, { rateLimits: RAISED_RATE_LIMITS });
    const before = await balances();
    const blocks = shellBlocks('docs/api.md');
    expect(blocks.length).toBeGreaterThanOrEqual(5);
    expect(await runSession([...README(), ...blocks])).toMatchObject({ code: 0 });

    // Alice: the cashout given back, the hold partly refunded, the test clock's hold refunded at
    // its expiry; Bob: the release less its fee, the dispute's reserve won back.
    const after = await balances();
    for (const balance of before) after.splice(after.indexOf(balance), 1);
    expect(after).toEqual([61.9, 67.5]);
    expect(await count('transaction_type=mobile_money_cashout&status=failed')).toBe(1);
    expect(await count('transaction_type=escrow_hold&status=reversed')).toBe(2);
    expect(await count('transaction_type=dispute_release')).toBe(1);
    expect(await count('status=pending')).toBe(0);
    await assertLedgerInvariant(engine.pool);
  }, 120_000);
});
