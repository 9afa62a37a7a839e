import { randomUUID } from 'node:crypto';
import { sql } from 'slonik';
import { insertTransaction } from '../../src/db/transactions';
import { clientFor, createFundedWallet, createUserWithWallet, transfer } from '../support/http';
import { useTestApp, useTestEngine } from '../support/hooks';

const engine = useTestEngine();
const { app, api, live } = useTestApp(engine);
const { api: other } = useTestApp(engine);

const LIST = '/api/v1/transactions/';
const DEPOSIT = '/api/v1/transactions/wallet/mobile-money-deposit';
const SIMULATE = '/api/v1/testing/simulate-mobile-money-webhook';
const MISSING = '00000000-0000-4000-8000-000000000000';
const ISO_NANOS = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z$/;

type Transaction = { id: string; wallet_id: string; created_at: string };
type Step = {
  name: string;
  kind: string;
  status: string;
  attempts: number;
  started_at: string;
  ended_at: string | null;
  provider_reference: string | null;
  failure: string | null;
};

type Page = {
  data: Transaction[];
  page: number;
  per_page: number;
  total: number;
  total_pages: number;
};
type Timeline = {
  transaction_id: string;
  workflow_id: string | null;
  workflow_type: string | null;
  status: string;
  workflow_status: string | null;
  started_at: string | null;
  ended_at: string | null;
  steps: Step[];
  note: string | null;
};

/** What this file's test-mode application did, made once through the API. */
let data: {
  a: string;
  b: string;
  c: string;
  transfers: [Transaction, Transaction, Transaction];
  paid: { id: string; code: string };
  failed: string;
  pending: { id: string; code: string };
  liveTransfer: Transaction;
  otherTransfer: Transaction;
};

async function deposit(walletId: string, amount: number) {
  const res = await api.post(DEPOSIT, { wallet_id: walletId, amount });
  if (res.status !== 200) throw new Error(`deposit: ${res.status} ${JSON.stringify(res.body)}`);
  return { id: res.body.transaction_id as string, code: res.body.payment_code.result.id as string };
}

beforeAll(async () => {
  const [a, b, c] = [
    (await createFundedWallet(api, engine.pool, 100_000n)).walletId,
    (await createUserWithWallet(api)).walletId,
    (await createUserWithWallet(api)).walletId,
  ];
  const transfers: [Transaction, Transaction, Transaction] = [
    await transfer<Transaction>(api, a, b, 10),
    await transfer<Transaction>(api, a, c, 20),
    await transfer<Transaction>(api, b, c, 5),
  ];
  const paid = await deposit(a, 10_000);
  const settled = await api.post(SIMULATE, { transaction_id: paid.id, status: 'successful' });
  expect(settled.body.status).toBe('completed');
  const failed = await deposit(b, 500);
  expect(
    (await api.post(SIMULATE, { transaction_id: failed.id, status: 'failed' })).body.status,
  ).toBe('failed');
  const pending = await deposit(c, 700);

  const liveA = (await createFundedWallet(live, engine.pool, 1_000n)).walletId;
  const liveB = (await createUserWithWallet(live)).walletId;
  const liveTransfer = await transfer<Transaction>(live, liveA, liveB, 1);

  const otherA = (await createFundedWallet(other, engine.pool, 1_000n)).walletId;
  const otherB = (await createUserWithWallet(other)).walletId;
  const otherTransfer = await transfer<Transaction>(other, otherA, otherB, 2);

  data = { a, b, c, transfers, paid, failed: failed.id, pending, liveTransfer, otherTransfer };
});

const ids = (body: { data: { id: string }[] }) => body.data.map((t) => t.id);

describe('GET /api/v1/transactions/', () => {
  it('answers the page envelope of the application’s and mode’s transactions, newest first', async () => {
    const res = await api.get<Page>(LIST);
    expect(res.status).toBe(200);
    expect(Object.keys(res.body).sort()).toEqual([
      'data',
      'page',
      'per_page',
      'total',
      'total_pages',
    ]);
    expect(res.body).toMatchObject({ page: 1, per_page: 20, total: 6, total_pages: 1 });
    const [t1, t2, t3] = data.transfers;
    expect(ids(res.body)).toEqual([
      data.pending.id,
      data.failed,
      data.paid.id,
      t3.id,
      t2.id,
      t1.id,
    ]);
    // Each item is the Transaction record, exactly as the transfer answered it.
    expect(res.body.data[5]).toEqual(t1);
    expect(Object.keys(res.body.data[0]!).sort()).toEqual(Object.keys(t1).sort());
    expect(res.body.data.slice(0, 3)).toMatchObject([
      { transaction_type: 'mobile_money_deposit', status: 'pending', amount: 7 },
      { transaction_type: 'mobile_money_deposit', status: 'failed', amount: 5 },
      { transaction_type: 'mobile_money_deposit', status: 'completed', amount: 100 },
    ]);
  });

  it('filters by status, transaction_type and wallet_id (sender or recipient), alone and together', async () => {
    const [t1, t2, t3] = data.transfers;
    const list = async (query: string) => {
      const res = await api.get(`${LIST}?${query}`);
      expect(res.status).toBe(200);
      return res.body;
    };
    expect(ids(await list('status=completed'))).toEqual([data.paid.id, t3.id, t2.id, t1.id]);
    expect(ids(await list('status=pending'))).toEqual([data.pending.id]);
    expect(ids(await list('status=failed'))).toEqual([data.failed]);
    expect((await list('status=held')).total).toBe(0);
    expect(ids(await list('transaction_type=transfer'))).toEqual([t3.id, t2.id, t1.id]);
    expect(ids(await list('transaction_type=mobile_money_deposit'))).toEqual([
      data.pending.id,
      data.failed,
      data.paid.id,
    ]);
    expect((await list('transaction_type=escrow_hold')).total).toBe(0);
    // b sent t3, received t1, and deposited (failed).
    expect(ids(await list(`wallet_id=${data.b}`))).toEqual([data.failed, t3.id, t1.id]);
    expect(ids(await list(`wallet_id=${data.c.toUpperCase()}`))).toEqual([
      data.pending.id,
      t3.id,
      t2.id,
    ]);
    expect(ids(await list(`wallet_id=${data.b}&transaction_type=transfer`))).toEqual([
      t3.id,
      t1.id,
    ]);
    expect(ids(await list(`wallet_id=${data.b}&status=failed`))).toEqual([data.failed]);
    expect(
      ids(await list(`wallet_id=${data.a}&status=completed&transaction_type=mobile_money_deposit`)),
    ).toEqual([data.paid.id]);
    expect(await list(`wallet_id=${MISSING}`)).toEqual({
      data: [],
      page: 1,
      per_page: 20,
      total: 0,
      total_pages: 0,
    });
  });

  it('pages with page and per_page', async () => {
    const all = ids((await api.get(LIST)).body);
    const pages = [];
    for (const page of [1, 2, 3]) {
      const res = await api.get(`${LIST}?per_page=2&page=${page}`);
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ page, per_page: 2, total: 6, total_pages: 3 });
      pages.push(...ids(res.body));
    }
    expect(pages).toEqual(all);
    expect((await api.get(`${LIST}?per_page=4&page=2`)).body).toMatchObject({
      data: [expect.anything(), expect.anything()],
      total_pages: 2,
    });
    const beyond = await api.get(`${LIST}?per_page=2&page=4`);
    expect(beyond.body).toEqual({ data: [], page: 4, per_page: 2, total: 6, total_pages: 3 });
    const filtered = await api.get(`${LIST}?transaction_type=transfer&per_page=1&page=2`);
    expect(filtered.body).toMatchObject({ total: 3, total_pages: 3, per_page: 1, page: 2 });
    expect(ids(filtered.body)).toEqual([data.transfers[1].id]);
    expect((await api.get(`${LIST}?per_page=100`)).body.total).toBe(6);
  });

  it('answers 422 for an unknown status or type, a malformed wallet id, or paging out of range', async () => {
    for (const query of [
      'status=paid',
      'status=',
      'status=COMPLETED',
      'status=completed&status=failed',
      'transaction_type=deposit',
      'wallet_id=not-a-wallet',
      'per_page=0',
      'per_page=101',
      'per_page=ten',
      'page=0',
      'page=-1',
      'page=1.5',
    ]) {
      const res = await api.get(`${LIST}?${query}`);
      expect([query, res.status]).toEqual([query, 422]);
      expect(Object.keys(res.body)).toEqual(['detail']);
    }
    expect((await api.get(`${LIST}?status=paid`)).body.detail).toBe(
      'status: must be one of pending, held, completed, failed, expired, reversed',
    );
  });

  it('keeps applications and modes apart', async () => {
    const theirs = await other.get(LIST);
    expect(theirs.status).toBe(200);
    expect(ids(theirs.body)).toEqual([data.otherTransfer.id]);
    const liveList = await live.get(LIST);
    expect(ids(liveList.body)).toEqual([data.liveTransfer.id]);
    expect(liveList.body.total).toBe(1);
    // A wallet filter naming another application's or mode's wallet is refused.
    const foreign = await other.get(`${LIST}?wallet_id=${data.a}`);
    expect(foreign.status).toBe(403);
    expect(foreign.body).toEqual({ detail: 'You do not have permission to access this wallet' });
    expect((await live.get(`${LIST}?wallet_id=${data.a}`)).status).toBe(403);
    expect((await api.get(`${LIST}?wallet_id=${data.liveTransfer.wallet_id}`)).status).toBe(403);
    expect((await clientFor(engine.url, null).get(LIST)).status).toBe(401);
  });
});

describe('GET /api/v1/transactions/{transaction_id}', () => {
  it('answers the Transaction record', async () => {
    const [t1] = data.transfers;
    const res = await api.get(`/api/v1/transactions/${t1.id}`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual(t1);
    expect((await api.get(`/api/v1/transactions/${t1.id}/`)).body).toEqual(t1);
    expect((await api.get(`/api/v1/transactions/${t1.id.toUpperCase()}`)).body).toEqual(t1);
    const paid = await api.get(`/api/v1/transactions/${data.paid.id}`);
    expect(paid.body).toMatchObject({
      id: data.paid.id,
      wallet_id: data.a,
      transaction_type: 'mobile_money_deposit',
      status: 'completed',
      amount: 100,
      application_fee: 0,
    });
  });

  it('answers 404 for a transaction that does not exist, 403 for another application’s or mode’s', async () => {
    for (const id of [MISSING, 'not-a-transaction']) {
      const res = await api.get(`/api/v1/transactions/${id}`);
      expect(res.status).toBe(404);
      // A malformed id names nothing: the same 404 as a missing one.
      expect(res.body.detail).toMatch(/^transaction not found$/i);
    }
    const foreign = await other.get(`/api/v1/transactions/${data.transfers[0].id}`);
    expect(foreign.status).toBe(403);
    expect(foreign.body).toEqual({
      detail: 'You do not have permission to access this transaction',
    });
    expect((await live.get(`/api/v1/transactions/${data.transfers[0].id}`)).status).toBe(403);
    expect((await api.get(`/api/v1/transactions/${data.liveTransfer.id}`)).status).toBe(403);
    expect(
      (await clientFor(engine.url, null).get(`/api/v1/transactions/${data.transfers[0].id}`))
        .status,
    ).toBe(401);
  });
});

describe('GET /api/v1/transactions/{transaction_id}/timeline', () => {
  const timeline = (id: string, client = api) =>
    client.get<Timeline>(`/api/v1/transactions/${id}/timeline`);

  function checkSteps(steps: Step[]) {
    for (const step of steps) {
      expect(Object.keys(step).sort()).toEqual([
        'attempts',
        'ended_at',
        'failure',
        'kind',
        'name',
        'provider_reference',
        'started_at',
        'status',
      ]);
      expect(step.started_at).toMatch(ISO_NANOS);
      if (step.ended_at !== null) {
        expect(step.ended_at).toMatch(ISO_NANOS);
        expect(step.ended_at >= step.started_at).toBe(true);
      }
    }
    const starts = steps.map((s) => s.started_at);
    expect([...starts].sort()).toEqual(starts);
  }

  it('shows a transfer: the workflow’s start, transferFunds completed at the first attempt, the end', async () => {
    const [t1] = data.transfers;
    const res = await timeline(t1.id);
    expect(res.status).toBe(200);
    expect(Object.keys(res.body).sort()).toEqual([
      'ended_at',
      'note',
      'started_at',
      'status',
      'steps',
      'transaction_id',
      'workflow_id',
      'workflow_status',
      'workflow_type',
    ]);
    expect(res.body).toMatchObject({
      transaction_id: t1.id,
      workflow_id: `transfer-${t1.id}`,
      workflow_type: 'transferWorkflow',
      status: 'completed',
      workflow_status: 'completed',
      note: null,
    });
    const steps: Step[] = res.body.steps;
    checkSteps(steps);
    expect(steps.map((s: Step) => [s.name, s.kind, s.status, s.attempts])).toEqual([
      ['start', 'workflow', 'completed', 1],
      ['transferFunds', 'activity', 'completed', 1],
      ['end', 'workflow', 'completed', 1],
    ]);
    expect(steps[1]).toMatchObject({ provider_reference: null, failure: null });
    expect(res.body.started_at).toBe(steps[0]!.started_at);
    expect(res.body.ended_at).toBe(steps[2]!.ended_at);
    // The record was written inside the workflow's run.
    const created = Date.parse(t1.created_at);
    expect(Date.parse(res.body.started_at!)).toBeLessThanOrEqual(created + 1);
    expect(Date.parse(res.body.ended_at!)).toBeGreaterThanOrEqual(created - 1);
  });

  it('shows a paid mobile-money deposit: openDeposit with the payment code, the open and notify updates, completeDeposit, the end', async () => {
    const res = await timeline(data.paid.id);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      transaction_id: data.paid.id,
      workflow_id: `deposit-${data.paid.id}`,
      workflow_type: 'mobileMoneyDepositWorkflow',
      status: 'completed',
      workflow_status: 'completed',
      ended_at: expect.stringMatching(ISO_NANOS),
      note: null,
    });
    const steps: Step[] = res.body.steps;
    checkSteps(steps);
    expect(steps.map((s: Step) => [s.name, s.kind, s.status, s.attempts])).toEqual([
      ['start', 'workflow', 'completed', 1],
      ['open', 'update', 'completed', 1],
      ['openDeposit', 'activity', 'completed', 1],
      [expect.stringMatching(/^timer PT30M[\d.]+S$/), 'timer', 'canceled', 1],
      ['notify', 'update', 'completed', 1],
      // The notification is only a reason to ask: the provider says the code is paid.
      ['checkPaymentCode', 'activity', 'completed', 1],
      ['completeDeposit', 'activity', 'completed', 1],
      ['end', 'workflow', 'completed', 1],
    ]);
    const step = (name: string) => steps.find((s: Step) => s.name === name)!;
    expect(step('openDeposit').provider_reference).toBe(data.paid.code);
    expect(step('open').provider_reference).toBe(data.paid.code);
    expect(step('notify').provider_reference).toBeNull();
    expect(step('completeDeposit').provider_reference).toBeNull();
    // completeDeposit ran inside the notify update.
    expect(step('completeDeposit').started_at >= step('notify').started_at).toBe(true);
    expect(step('completeDeposit').ended_at! <= step('notify').ended_at!).toBe(true);
    expect(steps.every((s: Step) => s.failure === null)).toBe(true);
  });

  it('shows a failed deposit closed by closeDeposit, and a pending one still waiting', async () => {
    const failed = await timeline(data.failed);
    expect(failed.body).toMatchObject({ status: 'failed', workflow_status: 'completed' });
    checkSteps(failed.body.steps);
    expect(failed.body.steps.map((s: Step) => [s.name, s.status])).toEqual([
      ['start', 'completed'],
      ['open', 'completed'],
      ['openDeposit', 'completed'],
      [expect.stringMatching(/^timer /), 'canceled'],
      ['notify', 'completed'],
      ['checkPaymentCode', 'completed'],
      ['closeDeposit', 'completed'],
      ['end', 'completed'],
    ]);

    const pending = await timeline(data.pending.id);
    expect(pending.body).toMatchObject({
      status: 'pending',
      workflow_status: 'running',
      ended_at: null,
    });
    checkSteps(pending.body.steps);
    expect(pending.body.steps.map((s: Step) => [s.name, s.status, s.ended_at === null])).toEqual([
      ['start', 'completed', false],
      ['open', 'completed', false],
      ['openDeposit', 'completed', false],
      [expect.stringMatching(/^timer /), 'running', true],
    ]);
    expect(pending.body.steps[2]!.provider_reference).toBe(data.pending.code);
  });

  it('shows a sync update and its checkPaymentCode with the provider reference', async () => {
    const { walletId } = await createUserWithWallet(api);
    const d = await deposit(walletId, 900);
    const synced = await api.post(`/api/v1/transactions/sync/${d.code}`);
    expect(synced.body.status).toBe('pending');
    const res = await timeline(d.id);
    checkSteps(res.body.steps);
    expect(
      res.body.steps.slice(4).map((s: Step) => [s.name, s.kind, s.status, s.provider_reference]),
    ).toEqual([
      ['sync', 'update', 'completed', null],
      ['checkPaymentCode', 'activity', 'completed', d.code],
    ]);
  });

  it('answers 404 for a missing transaction and 403 for another application’s or mode’s', async () => {
    for (const id of [MISSING, 'nope']) {
      const res = await api.get(`/api/v1/transactions/${id}/timeline`);
      expect(res.status).toBe(404);
      // A malformed id names nothing: the same 404 as a missing one.
      expect(res.body.detail).toMatch(/^transaction not found$/i);
    }
    expect((await timeline(data.paid.id, other)).status).toBe(403);
    expect((await timeline(data.paid.id, live)).status).toBe(403);
    expect((await timeline(data.liveTransfer.id)).status).toBe(403);
    expect((await timeline(data.liveTransfer.id, live)).status).toBe(200);
  });

  it('answers 200 with no steps and a note when the history is no longer retained', async () => {
    const t = await transfer<Transaction>(api, data.a, data.b, 1);
    // Temporal drops a closed workflow's history after the namespace's retention period; the
    // server then answers NOT_FOUND for it, as it does for a workflow id it never knew.
    const workflowId = `transfer-${randomUUID()}`;
    await engine.pool.query(
      sql.unsafe`UPDATE transactions SET workflow_id = ${workflowId} WHERE id = ${t.id}`,
    );
    const res = await timeline(t.id);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      transaction_id: t.id,
      workflow_id: workflowId,
      workflow_type: null,
      status: 'completed',
      workflow_status: null,
      started_at: null,
      ended_at: null,
      steps: [],
      note: 'The workflow history of this transaction is no longer retained, so its steps cannot be shown',
    });
  });

  it('answers 200 with no steps and a note for a transaction no workflow made', async () => {
    const id = randomUUID();
    await insertTransaction(engine.pool, {
      id,
      applicationId: app.id,
      mode: 'test',
      type: 'fee',
      status: 'completed',
      currency: 'SLE',
      amount: 100n,
      walletId: data.a,
    });
    const res = await timeline(id);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      transaction_id: id,
      workflow_id: null,
      status: 'completed',
      steps: [],
      note: 'This transaction was not made by a workflow, so it has no steps to show',
    });
  });
});
