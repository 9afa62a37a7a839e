/**
 * Personal data kept by the engine: encrypted in Temporal's histories (src/temporal/payload-codec.ts),
 * readable by admins through the codec endpoint the Temporal UI calls
 * (src/api/routes/temporal-codec.ts), and erased from what is kept when the user is deleted.
 */
import { temporal } from '@temporalio/proto';
import { PLAINTEXT_REFUSED } from '../../src/temporal/payload-codec';
import { sql } from 'slonik';
import { z } from 'zod';
import { createAdmin, type CreatedAdmin } from '../../src/db/admins';
import { workflowIds } from '../../src/workflows/ids';
import { balanceOf, fundWallet } from '../support/database';
import { clientFor, createUserWithWallet } from '../support/http';
import { useTestApp, useTestEngine } from '../support/hooks';
import { onboardForPayouts, VERIFIED_INDIVIDUAL } from '../support/payouts';

const UI_ORIGIN = 'https://temporal-ui.example';

const engine = useTestEngine({ env: { TEMPORAL_CODEC_ALLOWED_ORIGINS: UI_ORIGIN } });
const { app, api } = useTestApp(engine);

const CASHOUT = '/api/v1/transactions/wallet/mobile-money-cashout';
const DEPOSIT = '/api/v1/transactions/wallet/mobile-money-deposit';
const SIMULATE = '/api/v1/testing/simulate-mobile-money-webhook';
const DECODE = '/api/v1/temporal-codec/decode';
const ENCODE = '/api/v1/temporal-codec/encode';

/** Verified at once by the sandbox (its identity number), with a phone number of its own. */
const IDENTITY = { ...VERIFIED_INDIVIDUAL, phone: '+23279555111' };
const CASHOUT_PHONE = '+23278123987';

/** A workflow's whole history, as Temporal keeps it: the raw service call, nothing decoded. */
async function rawHistory(workflowId: string): Promise<Buffer> {
  const pages: Buffer[] = [];
  let nextPageToken: Uint8Array | undefined;
  do {
    const page = await engine.temporal.workflowService.getWorkflowExecutionHistory({
      namespace: engine.config.temporal.namespace,
      execution: { workflowId },
      nextPageToken,
    });
    pages.push(
      Buffer.from(
        temporal.api.workflowservice.v1.GetWorkflowExecutionHistoryResponse.encode(page).finish(),
      ),
    );
    nextPageToken = page.nextPageToken?.length ? page.nextPageToken : undefined;
  } while (nextPageToken);
  return Buffer.concat(pages);
}

/** A cashout of `amount` to CASHOUT_PHONE, paid by the sandbox; answers the cashout. */
async function paidCashout(walletId: string, amount: number) {
  const res = await api.post(CASHOUT, { wallet_id: walletId, amount, phone_number: CASHOUT_PHONE });
  expect(res.status).toBe(200);
  const paid = await api.post(SIMULATE, { transaction_id: res.body.id, status: 'successful' });
  expect(paid.body).toMatchObject({ status: 'completed' });
  await engine.temporal.workflow.getHandle(workflowIds.cashout(res.body.id)).result();
  return res.body as { id: string; total_amount: number; provider_reference: string };
}

let cashoutId: string;

describe('Temporal histories', () => {
  it('hold no identity details or phone number in plain text, and the API answers as before', async () => {
    const { walletId } = await createUserWithWallet(api);
    const onboarded = await onboardForPayouts(api, walletId, { individual: IDENTITY });
    expect(onboarded.status).toBe(200);
    expect(onboarded.body).toMatchObject({ message: 'Account verified', payouts_enabled: true });
    const state = await api.get(`/api/v1/transactions/wallet/${walletId}/onboarding`);
    expect(state.body).toEqual(onboarded.body);
    const onboarding = workflowIds.onboarding(walletId);
    expect(await engine.temporal.workflow.getHandle(onboarding).result()).toMatchObject({
      accountId: onboarded.body.account_id,
    });

    await fundWallet(engine.pool, walletId, 10_000n);
    const cashout = await paidCashout(walletId, 1_000);
    cashoutId = cashout.id;
    const timeline = await api.get(`/api/v1/transactions/${cashout.id}/timeline`);
    expect(timeline.body).toMatchObject({ status: 'completed', workflow_status: 'completed' });
    const names = (timeline.body.steps as { name: string }[]).map((s) => s.name);
    expect(names).toEqual(expect.arrayContaining(['reserveMoneyOut', 'sendMoneyOut']));

    const histories = Buffer.concat([
      await rawHistory(onboarding),
      await rawHistory(workflowIds.cashout(cashout.id)),
    ]).toString('latin1');
    expect(histories).toContain('binary/encrypted');
    for (const secret of [
      IDENTITY.id_number,
      IDENTITY.last_name,
      IDENTITY.email,
      IDENTITY.phone,
      IDENTITY.address.line1,
      // As a plain JSON payload holds it: a bare year also turns up in ids and line numbers.
      `"year":${IDENTITY.dob.year}`,
      CASHOUT_PHONE,
    ]) {
      expect({ secret, found: histories.includes(secret) }).toEqual({ secret, found: false });
    }
  });
});

/** The first payload of the cashout workflow's start event (its input), as Temporal keeps it. */
async function keptInput(): Promise<{ metadata: Record<string, string>; data: string }> {
  const { history } = await engine.temporal.workflowService.getWorkflowExecutionHistory({
    namespace: engine.config.temporal.namespace,
    execution: { workflowId: workflowIds.cashout(cashoutId) },
  });
  const started = history!.events![0]!.workflowExecutionStartedEventAttributes!;
  const payload = started.input!.payloads![0]!;
  return {
    metadata: Object.fromEntries(
      Object.entries(payload.metadata!).map(([k, v]) => [k, Buffer.from(v).toString('base64')]),
    ),
    data: Buffer.from(payload.data!).toString('base64'),
  };
}

const utf8 = (base64: string) => Buffer.from(base64, 'base64').toString('utf8');

describe('the codec endpoint of the Temporal UI', () => {
  let admin: CreatedAdmin;
  const anonymous = () => clientFor(engine.url, null);
  const asAdmin = () => ({ 'api-key': admin.api_key, 'secret-key': admin.secret_key });
  beforeAll(async () => {
    admin = await createAdmin(engine.pool, 'codec operator');
  });

  it('decodes for an admin, by headers or by HTTP Basic, and round-trips an encode', async () => {
    const kept = await keptInput();
    expect(utf8(kept.metadata.encoding!)).toBe('binary/encrypted');
    const byHeaders = await anonymous().post(DECODE, { payloads: [kept] }, asAdmin());
    expect(byHeaders.status).toBe(200);
    const [plain] = byHeaders.body.payloads as { metadata: Record<string, string>; data: string }[];
    expect(utf8(plain!.metadata.encoding!)).toBe('json/plain');
    expect(JSON.parse(utf8(plain!.data))).toMatchObject({ transactionId: cashoutId });
    expect(utf8(plain!.data)).toContain(CASHOUT_PHONE);

    const basic = `Basic ${Buffer.from(`${admin.api_key}:${admin.secret_key}`).toString('base64')}`;
    const byBasic = await anonymous().post(
      DECODE,
      { payloads: [kept] },
      { authorization: basic, origin: UI_ORIGIN, 'x-namespace': engine.config.temporal.namespace },
    );
    expect(byBasic.status).toBe(200);
    expect(byBasic.body).toEqual(byHeaders.body);
    expect(byBasic.headers.get('access-control-allow-origin')).toBe(UI_ORIGIN);
    expect(byBasic.headers.get('access-control-allow-credentials')).toBe('true');

    const encoded = await anonymous().post(ENCODE, byHeaders.body, asAdmin());
    expect(encoded.status).toBe(200);
    expect(utf8(encoded.body.payloads[0].metadata.encoding)).toBe('binary/encrypted');
    expect(utf8(encoded.body.payloads[0].data)).not.toContain(CASHOUT_PHONE);
    const back = await anonymous().post(DECODE, encoded.body, asAdmin());
    expect(back.body).toEqual(byHeaders.body);
  });

  it('refuses anyone but an admin (401 with a Basic challenge, 403), decoding nothing', async () => {
    const kept = await keptInput();
    const nobody = await anonymous().post(DECODE, { payloads: [kept] });
    expect(nobody.status).toBe(401);
    expect(nobody.body).toEqual({ detail: expect.stringMatching(/admin credentials/) });
    expect(nobody.headers.get('www-authenticate')).toMatch(/^Basic realm="Temporal codec"/);
    const wrong = `Basic ${Buffer.from(`${admin.api_key}:not-the-secret`).toString('base64')}`;
    const badBasic = await anonymous().post(DECODE, { payloads: [kept] }, { authorization: wrong });
    expect(badBasic.status).toBe(401);
    expect(badBasic.body).toEqual({ detail: 'Invalid admin credentials' });
    const merchant = await api.post(DECODE, { payloads: [kept] });
    expect(merchant.status).toBe(403);
    expect(merchant.body).toEqual({ detail: 'This endpoint needs admin credentials' });
    for (const reply of [nobody, badBasic, merchant]) {
      expect(JSON.stringify(reply.body)).not.toContain(
        Buffer.from(CASHOUT_PHONE).toString('base64'),
      );
    }
  });

  it('refuses another namespace, a body that is not JSON, a payload no key decrypts and a plain one', async () => {
    const kept = await keptInput();
    const other = await anonymous().post(
      DECODE,
      { payloads: [kept] },
      {
        ...asAdmin(),
        'x-namespace': 'someone-else',
      },
    );
    expect(other.status).toBe(400);
    expect(other.body).toEqual({
      detail: `This codec serves the namespace ${engine.config.temporal.namespace}, not someone-else`,
    });
    const form = await anonymous().request('POST', DECODE, {
      raw: JSON.stringify({ payloads: [kept] }),
      headers: { ...asAdmin(), 'content-type': 'text/plain' },
    });
    expect(form.status).toBe(400);
    expect(form.body).toEqual({ detail: 'The body must be application/json' });
    const foreign = {
      ...kept,
      metadata: {
        ...kept.metadata,
        'encryption-key-id': Buffer.from('retired').toString('base64'),
      },
    };
    const unknown = await anonymous().post(DECODE, { payloads: [foreign] }, asAdmin());
    expect(unknown.status).toBe(422);
    expect(unknown.body).toEqual({
      detail: 'payloads: The payload was encrypted with key "retired", which is not configured',
    });
    // A payload that is not encrypted may have been written by anyone: not read, not shown.
    const forged = {
      metadata: { encoding: Buffer.from('json/plain').toString('base64') },
      data: Buffer.from(JSON.stringify({ transactionId: cashoutId })).toString('base64'),
    };
    const plain = await anonymous().post(DECODE, { payloads: [kept, forged] }, asAdmin());
    expect(plain.status).toBe(422);
    expect(plain.body).toEqual({ detail: `payloads: ${PLAINTEXT_REFUSED}` });
  });

  it('answers the CORS preflight of the configured UI origin only', async () => {
    const preflight = (origin: string) =>
      anonymous().request('OPTIONS', DECODE, {
        headers: {
          origin,
          'access-control-request-method': 'POST',
          'access-control-request-headers': 'content-type,x-namespace',
        },
      });
    const allowed = await preflight(UI_ORIGIN);
    expect(allowed.status).toBe(204);
    expect(Object.fromEntries(allowed.headers)).toMatchObject({
      'access-control-allow-origin': UI_ORIGIN,
      'access-control-allow-credentials': 'true',
      'access-control-allow-methods': 'GET, POST',
      'access-control-allow-headers': expect.stringContaining('X-Namespace'),
    });
    const refused = await preflight('https://elsewhere.example');
    expect(refused.status).toBe(403);
    expect(refused.body).toEqual({
      detail:
        'The origin https://elsewhere.example may not call the codec endpoint (TEMPORAL_CODEC_ALLOWED_ORIGINS)',
    });
    expect(refused.headers.get('access-control-allow-origin')).toBeNull();
    const post = await anonymous().post(
      DECODE,
      { payloads: [await keptInput()] },
      { ...asAdmin(), origin: 'https://elsewhere.example' },
    );
    expect(post.status).toBe(403);
    expect(post.body.payloads).toBeUndefined();
  });
});

const moneyOutRow = z.object({ metadata: z.any(), amount: z.bigint(), status: z.string() });

describe('deleting a user', () => {
  it('erases the cashout phone number and the notification bodies; the ledger and balances stay', async () => {
    const { userId, walletId } = await createUserWithWallet(api);
    const deposit = await api.post(DEPOSIT, { wallet_id: walletId, amount: 10_000 });
    expect(deposit.status).toBe(200);
    const depositId = deposit.body.transaction_id as string;
    await api.post(SIMULATE, { transaction_id: depositId, status: 'successful' });
    await engine.temporal.workflow.getHandle(workflowIds.deposit(depositId)).result();
    const cashout = await paidCashout(walletId, 5_000);
    // Whatever the cashout left goes out again, so that the user can be deleted.
    const left = await balanceOf(engine.pool, walletId);
    if (left > 0n) await fundWallet(engine.pool, walletId, -left);
    const ids = [depositId, cashout.id];

    const notifications = () =>
      engine.pool.any(sql.type(z.object({ transaction_id: z.string(), body: z.any() }))`
        SELECT transaction_id, body FROM provider_notifications
        WHERE transaction_id = ANY(${sql.array(ids, 'uuid')}) ORDER BY received_at`);
    const ledger = () =>
      engine.pool.any(sql.type(z.object({ account_id: z.string(), amount: z.bigint() }))`
        SELECT e.account_id, e.amount FROM ledger_entries e
        JOIN ledger_transactions t ON t.id = e.ledger_transaction_id
        WHERE t.transaction_id = ANY(${sql.array(ids, 'uuid')}) ORDER BY e.id`);
    const accounts = () =>
      engine.pool.any(sql.type(z.object({ id: z.string(), balance: z.bigint() }))`
        SELECT id, balance FROM ledger_accounts WHERE application_id = ${app.id} ORDER BY id`);
    const payment = (id: string) =>
      engine.pool.one(sql.type(moneyOutRow)`
        SELECT metadata, amount, status FROM transactions WHERE id = ${id}`);
    const sandboxPhones = () =>
      engine.pool.anyFirst(sql.type(z.object({ phone_number: z.string() }))`
        SELECT phone_number FROM sandbox_mobile_money_payouts WHERE reference = ${cashout.id}`);

    const kept = await notifications();
    expect(kept.map((n) => n.transaction_id).sort()).toEqual([...ids].sort());
    expect(kept.every((n) => Object.keys(n.body as object).length > 0)).toBe(true);
    const before = await payment(cashout.id);
    expect(before.metadata.destination).toEqual({ phone_number: CASHOUT_PHONE });
    expect(await sandboxPhones()).toEqual([CASHOUT_PHONE]);
    const entriesBefore = await ledger();
    const accountsBefore = await accounts();
    expect(await balanceOf(engine.pool, walletId)).toBe(0n);

    const deleted = await api.del(`/api/v1/users/${userId}/`);
    expect(deleted.status).toBe(200);
    expect(deleted.body).toEqual({ message: 'User deleted successfully' });

    expect((await notifications()).map((n) => n.body)).toEqual([{}, {}]);
    const after = await payment(cashout.id);
    expect(after.metadata.destination).toEqual({});
    expect(JSON.stringify(after.metadata)).not.toContain(CASHOUT_PHONE);
    expect({ amount: after.amount, status: after.status }).toEqual({
      amount: before.amount,
      status: 'completed',
    });
    expect({ ...after.metadata, destination: null }).toEqual({
      ...before.metadata,
      destination: null,
    });
    expect(await sandboxPhones()).toEqual(['']);
    expect(await ledger()).toEqual(entriesBefore);
    expect(await accounts()).toEqual(accountsBefore);
    expect(await api.get(`/api/v1/transactions/${cashout.id}`)).toMatchObject({
      status: 200,
      body: { id: cashout.id, status: 'completed' },
    });
  });
});
