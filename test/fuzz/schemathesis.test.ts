import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { SANDBOX_CARDS } from '../../src/providers/sandbox-card';
import { assertLedgerInvariant, fundWallet } from '../support/database';
import type { TestApp } from '../support/engine';
import { createUserWithWallet } from '../support/http';
import { useTestApp, useTestEngine } from '../support/hooks';

/**
 * Schemathesis (pinned by schemathesis-requirements.txt, installed by ensure-deps.sh --test) on the
 * real engine: every phase, every check, positive and negative data. Its configuration, and each
 * check configured away for one operation with the reason, is in schemathesis.toml.
 */
const ROOT = path.resolve(__dirname, '../..');
// The venv's own python, not its `bin/schemathesis` script: a script's first line names the
// venv's absolute path, which breaks when the checkout moves; `python -m` does not.
const PYTHON = path.join(ROOT, '.tools/schemathesis/bin/python');
const CONFIG = path.join(__dirname, 'schemathesis.toml');
const HOOKS = path.join(__dirname, 'schemathesis-hooks.py');
/**
 * Past this the run is stopped and fails; beside the rest of `npm test` on two cores the run
 * takes about a third longer than alone, so the limit leaves room for that.
 */
const RUN_LIMIT_MS = 8 * 60_000;

// The sandbox 3-D Secure page is limited per client address, and every request comes from
// loopback here: raised, as the applications' own limits are.
const engine = useTestEngine({ env: { RATE_LIMIT_CARD_AUTHENTICATION_PAGE: '1000000' } });
const { app, api } = useTestApp(engine);
const { app: otherApp } = useTestApp(engine);
let workDir: string;

beforeAll(async () => {
  workDir = await mkdtemp(path.join(os.tmpdir(), 'wallet-fuzz-'));
});
afterAll(async () => {
  if (workDir) await rm(workDir, { recursive: true, force: true });
});

type Seeded = Record<
  | 'users'
  | 'wallets'
  | 'transactions'
  | 'holds'
  | 'deposits'
  | 'cardDeposits'
  | 'disputes'
  | 'cardPayments'
  | 'paymentMethods',
  string[]
>;

async function post(pathname: string, body: unknown): Promise<Record<string, unknown>> {
  const reply = await api.post<Record<string, unknown>>(pathname, body);
  if (reply.status !== 200) {
    throw new Error(`seeding ${pathname}: ${reply.status} ${JSON.stringify(reply.body)}`);
  }
  return reply.body;
}

/**
 * Something for every identifier to name (funded wallets, a transfer, holds, a pending deposit, a
 * card deposit awaiting 3-D Secure, completed ones and a dispute), so that the fuzzed operations on
 * them can succeed, not only answer 404.
 */
async function seed(): Promise<Seeded> {
  const payer = await createUserWithWallet(api, { name: 'Fuzz payer' });
  const payee = await createUserWithWallet(api, { name: 'Fuzz payee' });
  await fundWallet(engine.pool, payer.walletId, 100_000_000n);
  await fundWallet(engine.pool, payee.walletId, 100_000_000n);
  const transfer = await post('/api/v1/transactions/wallet/transfer', {
    from_wallet_id: payer.walletId,
    to_wallet_id: payee.walletId,
    amount: 10,
  });
  const holds = [];
  for (let i = 0; i < 3; i += 1) {
    holds.push(
      await post('/api/v1/escrow/hold', {
        wallet_id: payer.walletId,
        amount: 25,
        recipient_wallet_id: payee.walletId,
      }),
    );
  }
  const deposit = await post('/api/v1/transactions/wallet/mobile-money-deposit', {
    wallet_id: payee.walletId,
    amount: 500,
  });
  const cardDeposit = await post('/api/v1/transactions/wallet/card-deposit', {
    wallet_id: payee.walletId,
    amount: 5,
    payment_method_id: 'pm_card_authenticationRequired',
  });
  // Completed card deposits to refund and dispute, and a dispute open on one of them.
  const charged = [];
  for (let i = 0; i < 2; i += 1) {
    charged.push(
      await post('/api/v1/transactions/wallet/card-deposit', {
        wallet_id: payee.walletId,
        amount: 50,
        payment_method_id: 'pm_card_visa',
      }),
    );
  }
  const chargedIds = charged.map((d) => String(d.id));
  const dispute = await post('/api/v1/testing/simulate-dispute', {
    transaction_id: chargedIds[0],
    amount: 10,
  });
  const holdIds = holds.map((hold) => String(hold.id));
  const depositIds = [String(deposit.transaction_id), String(cardDeposit.id)];
  return {
    users: [payer.userId, payee.userId],
    wallets: [payer.walletId, payee.walletId],
    transactions: [String(transfer.id), ...holdIds, ...depositIds, ...chargedIds],
    holds: holdIds,
    deposits: depositIds,
    cardDeposits: chargedIds,
    disputes: [String(dispute.id)],
    cardPayments: [String(cardDeposit.provider_reference)],
    paymentMethods: Object.keys(SANDBOX_CARDS),
  };
}

/** The seeded identifiers as schemathesis dictionaries, which schemathesis.toml binds. */
function seededDictionaries(seeded: Seeded): string {
  return Object.entries(seeded)
    .map(([name, values]) => `[dictionaries.${name}]\nvalues = ${JSON.stringify(values)}\n`)
    .join('\n');
}

/** Both merchants' Test Mode credentials as a Web Fuzzing Commons auth file. */
function authFile(): string {
  const identity = (name: string, { credentials }: TestApp) => ({
    name,
    fixedHeaders: [
      { name: 'api-key', value: credentials.test.apiKey },
      { name: 'secret-key', value: credentials.test.secretKey },
    ],
  });
  return JSON.stringify({
    auth: [identity('merchant', app), identity('other-merchant', otherApp)],
  });
}

function run(
  command: string,
  args: string[],
  options: { cwd: string; env: NodeJS.ProcessEnv; limitMs: number },
): Promise<{ code: number | null; signal: string | null; output: string; ms: number }> {
  return new Promise((resolve, reject) => {
    const started = Date.now();
    const child = spawn(command, args, { cwd: options.cwd, env: options.env });
    const chunks: Buffer[] = [];
    child.stdout.on('data', (chunk: Buffer) => chunks.push(chunk));
    child.stderr.on('data', (chunk: Buffer) => chunks.push(chunk));
    const timer = setTimeout(() => child.kill('SIGKILL'), options.limitMs);
    child.on('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({
        code,
        signal,
        output: Buffer.concat(chunks).toString('utf8'),
        ms: Date.now() - started,
      });
    });
  });
}

test(
  'schemathesis finds no failure in any operation of the served OpenAPI document',
  async () => {
    if (!existsSync(PYTHON)) {
      throw new Error(`${PYTHON} is missing: run bash tools/scripts/ensure-deps.sh --test`);
    }
    const seeded = await seed();
    const config = path.join(workDir, 'schemathesis.toml');
    const auth = path.join(workDir, 'auth.json');
    await writeFile(auth, authFile());
    await writeFile(
      config,
      `${await readFile(CONFIG, 'utf8')}\n# Seeded by ${path.basename(__filename)}\n${seededDictionaries(seeded)}`,
    );
    const result = await run(
      PYTHON,
      [
        '-m',
        'schemathesis.cli',
        '--config-file',
        config,
        'run',
        `${engine.url}/api/v1/openapi.json`,
        '--phases',
        'examples,coverage,fuzzing,stateful',
        '--no-color',
      ],
      {
        // Its own folder: schemathesis writes its state into the working directory.
        cwd: workDir,
        env: {
          ...process.env,
          WALLET_FUZZ_AUTH: auth,
          WALLET_FUZZ_HOOKS: HOOKS,
          NO_COLOR: '1',
          COLUMNS: '120',
        },
        limitMs: RUN_LIMIT_MS,
      },
    );
    const summary = `schemathesis exited with ${result.signal ?? result.code} after ${Math.round(result.ms / 1000)} s`;
    if (result.code !== 0) throw new Error(`${summary}:\n${result.output}`);
    // One plain line: schemathesis's own closing banner ("== 2 warnings in 78s ==") reads like a
    // pytest run that executed nothing to anything scanning the CI log.
    const cases = /(\d+) generated, (\d+) passed/.exec(result.output);
    if (!cases)
      throw new Error(`${summary}, but its output counts no test case:\n${result.output}`);
    console.log(
      `${summary}: ${cases[1]} generated cases, ${cases[2]} answered as the document says`,
    );
    expect(Number(cases[1])).toBeGreaterThan(1000);
    expect(cases[2]).toBe(cases[1]);
  },
  RUN_LIMIT_MS + 60_000,
);

test('every ledger transaction still balances after the fuzzing', async () => {
  await assertLedgerInvariant(engine.pool);
});
