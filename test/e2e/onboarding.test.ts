// ajv 8 validates real answers against the document's schemas (draft 2020-12).
import Ajv2020 from 'ajv/dist/2020';
import { sql } from 'slonik';
import { z } from 'zod';
import {
  canReceivePayouts,
  countPayoutDocuments,
  findPayoutAccount,
  insertPayoutDocument,
} from '../../src/db/payout-accounts';
import { isNotFound } from '../../src/temporal/connection';
import { workflowIds } from '../../src/workflows/ids';
import type { TestApp } from '../support/engine';
import { clientFor, createUserWithWallet } from '../support/http';
import { useTestApp, useTestEngine } from '../support/hooks';
import { listWorkflowIds } from '../support/wait';

const engine = useTestEngine({ env: { ONBOARDING_DOCUMENTS_PER_WALLET: '2' } });
const { app, api } = useTestApp(engine, { currency: 'USD' });
const { app: other } = useTestApp(engine, { currency: 'USD' });

const COMPLETE = '/api/v1/transactions/wallet/complete-onboarding/';
const stateOf = (walletId: string) => `/api/v1/transactions/wallet/${walletId}/onboarding`;
const syncOf = (walletId: string) => `/api/v1/transactions/wallet/${walletId}/onboarding/sync`;
const documentOf = (walletId: string) =>
  `/api/v1/transactions/wallet/${walletId}/verification-document`;

/** The end customer's address (TEST-NET-3, a documentation range: never contacted). */
const CUSTOMER = { 'x-forwarded-for': '203.0.113.7' };
const DOCUMENT_DUE = 'individual.verification.document';

function individual(overrides: Record<string, unknown> = {}) {
  return {
    first_name: 'Aminata',
    last_name: 'Kamara',
    dob: { day: 14, month: 3, year: 1990 },
    address: { line1: '12 Siaka Stevens Street', city: 'Freetown', country: 'SL' },
    email: 'aminata@example.com',
    phone: '+23276123456',
    id_number: '000000000',
    ...overrides,
  };
}

function submission(walletId: string, overrides: Record<string, unknown> = {}) {
  return {
    wallet_id: walletId,
    individual: individual(),
    business_profile: { mcc: '5734', product_description: 'Handmade furniture, sold online' },
    card_token: 'tok_visa_debit',
    ...overrides,
  };
}

const scope = () => ({ applicationId: app.id, mode: 'test' as const });

async function sandboxAccounts(accountId: string) {
  return engine.pool.any(sql.type(z.object({ id: z.string(), verification: z.string() }))`
    SELECT id, verification FROM sandbox_connect_accounts WHERE id = ${accountId}`);
}

async function workflowExists(walletId: string): Promise<boolean> {
  try {
    await engine.temporal.workflow.getHandle(workflowIds.onboarding(walletId)).describe();
    return true;
  } catch (error) {
    if (isNotFound(error)) return false;
    throw error;
  }
}

const PNG = Buffer.concat([
  Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
  Buffer.from('IHDR-identity-card-front-SECRET-MARKER-7731'),
]);
const PDF = Buffer.from('%PDF-1.4\n1 0 obj << >> endobj\ntrailer << >>\n%%EOF\n');
const GIF = Buffer.from('GIF89a-not-an-accepted-type');

/** A multipart upload over real HTTP, as a merchant's back end sends it. */
async function upload(
  walletId: string,
  parts: {
    file?: { content: Buffer; type: string; name?: string };
    purpose?: string;
    extra?: [string, string][];
  },
  credentials: TestApp = app,
) {
  const form = new FormData();
  for (const [name, value] of parts.extra ?? []) form.append(name, value);
  if (parts.file) {
    form.append(
      'file',
      new Blob([new Uint8Array(parts.file.content)], { type: parts.file.type }),
      parts.file.name ?? 'document',
    );
  }
  if (parts.purpose !== undefined) form.append('purpose', parts.purpose);
  const response = await fetch(`${engine.url}${documentOf(walletId)}`, {
    method: 'POST',
    headers: {
      'api-key': credentials.credentials.test.apiKey,
      'secret-key': credentials.credentials.test.secretKey,
    },
    body: form,
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

describe('payout-account onboarding', () => {
  it('verifies identity number 000000000 at once: 200, payouts enabled, the debit card attached, terms evidence kept', async () => {
    const { walletId } = await createUserWithWallet(api);
    const before = Date.now();
    const reply = await api.post(COMPLETE, submission(walletId), CUSTOMER);
    expect(reply.status).toBe(200);
    expect(reply.body).toEqual({
      message: 'Account verified',
      account_id: expect.stringMatching(/^acct_sandbox_/),
      payouts_enabled: true,
      external_account_added: true,
      currently_due: [],
      pending_verification: [],
      disabled_reason: null,
    });
    const row = await findPayoutAccount(engine.pool, scope(), walletId);
    expect(row).toMatchObject({
      account_id: reply.body.account_id,
      provider: 'sandbox',
      payouts_enabled: true,
      external_account_added: true,
      external_account_last4: '5556',
      tos_ip: '203.0.113.7',
    });
    const acceptedAt = Date.parse(row!.tos_accepted_at);
    expect(acceptedAt).toBeGreaterThanOrEqual(Math.floor(before / 1000) * 1000);
    expect(acceptedAt).toBeLessThanOrEqual(Date.now());
    expect(canReceivePayouts(row)).toBe(true);
    expect(await sandboxAccounts(reply.body.account_id)).toEqual([
      { id: reply.body.account_id, verification: 'verified' },
    ]);
    const state = await api.get(stateOf(walletId));
    expect(state.status).toBe(200);
    expect(state.body).toEqual(reply.body);
    // Verified: the workflow has nothing left to wait for and ends.
    const handle = engine.temporal.workflow.getHandle(workflowIds.onboarding(walletId));
    expect(await handle.result()).toMatchObject({ accountId: reply.body.account_id });
  });

  it('asks for a document (202), takes it (202, pending verification), and the re-sync verifies (200); a resubmission reuses the account', async () => {
    const { walletId } = await createUserWithWallet(api);
    const first = await api.post(
      COMPLETE,
      submission(walletId, {
        individual: individual({ id_number: '123456789' }),
        card_token: undefined,
      }),
      CUSTOMER,
    );
    expect(first.status).toBe(202);
    expect(first.body).toEqual({
      message: 'Further verification needed',
      account_id: expect.stringMatching(/^acct_sandbox_/),
      payouts_enabled: false,
      external_account_added: false,
      currently_due: [DOCUMENT_DUE],
      pending_verification: [],
      disabled_reason: 'requirements.past_due',
    });
    const accountId = first.body.account_id as string;
    expect(canReceivePayouts(await findPayoutAccount(engine.pool, scope(), walletId))).toBe(false);

    // Nothing uploaded yet: the re-sync still says a document is due.
    const early = await api.post(syncOf(walletId));
    expect(early.status).toBe(202);
    expect(early.body).toMatchObject({ currently_due: [DOCUMENT_DUE], payouts_enabled: false });

    const uploaded = await upload(walletId, {
      file: { content: PNG, type: 'image/png', name: 'passport.png' },
      purpose: 'identity_document',
    });
    expect(uploaded).toEqual({
      status: 202,
      body: {
        message: 'Further verification needed',
        account_id: accountId,
        payouts_enabled: false,
        external_account_added: false,
        currently_due: [],
        pending_verification: [DOCUMENT_DUE],
        disabled_reason: 'requirements.pending_verification',
      },
    });
    const documents = await engine.pool.any(sql.type(
      z.object({
        content_type: z.string(),
        content: z.instanceof(Buffer),
        provider_file_id: z.string().nullable(),
      }),
    )`SELECT content_type, content, provider_file_id FROM payout_documents
      WHERE wallet_id = ${walletId}`);
    expect(documents).toEqual([
      {
        content_type: 'image/png',
        content: PNG,
        provider_file_id: expect.stringMatching(/^file_sandbox_/),
      },
    ]);
    // The file is kept in the database, never written to a log.
    expect(engine.logs.some((line) => line.includes('SECRET-MARKER-7731'))).toBe(false);

    const synced = await api.post(syncOf(walletId));
    expect(synced.status).toBe(200);
    expect(synced.body).toEqual({
      message: 'Account verified',
      account_id: accountId,
      payouts_enabled: true,
      external_account_added: false,
      currently_due: [],
      pending_verification: [],
      disabled_reason: null,
    });
    // Payouts enabled but no card yet: a card payout would still be refused.
    expect(canReceivePayouts(await findPayoutAccount(engine.pool, scope(), walletId))).toBe(false);

    const again = await api.post(
      COMPLETE,
      submission(walletId, {
        individual: individual({ id_number: '123456789' }),
        card_token: 'tok_mastercard_debit',
      }),
      { 'x-forwarded-for': '198.51.100.24, 10.0.0.1' },
    );
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({
      account_id: accountId,
      payouts_enabled: true,
      external_account_added: true,
    });
    const row = await findPayoutAccount(engine.pool, scope(), walletId);
    expect(row).toMatchObject({ external_account_last4: '8210', tos_ip: '198.51.100.24' });
    expect(canReceivePayouts(row)).toBe(true);
    expect(await sandboxAccounts(accountId)).toHaveLength(1);
    const accounts = await engine.pool.oneFirst(sql.type(z.object({ n: z.number() }))`
      SELECT count(*)::int AS n FROM payout_accounts WHERE wallet_id = ${walletId}`);
    expect(accounts).toBe(1);
  });

  it('refuses a credit card: 400 "Payouts need a debit card", no card attached', async () => {
    const { walletId } = await createUserWithWallet(api);
    const reply = await api.post(
      COMPLETE,
      submission(walletId, { card_token: 'tok_visa' }),
      CUSTOMER,
    );
    expect(reply).toMatchObject({ status: 400, body: { detail: 'Payouts need a debit card' } });
    const row = await findPayoutAccount(engine.pool, scope(), walletId);
    expect(row).toMatchObject({ external_account_added: false, external_account_id: null });
    expect(canReceivePayouts(row)).toBe(false);
    // A debit card afterwards attaches to the same account.
    const fixed = await api.post(COMPLETE, submission(walletId), CUSTOMER);
    expect(fixed.status).toBe(200);
    expect(fixed.body).toMatchObject({ account_id: row!.account_id, external_account_added: true });
  });

  it('refuses an unknown card token with 400', async () => {
    const { walletId } = await createUserWithWallet(api);
    const reply = await api.post(
      COMPLETE,
      submission(walletId, { card_token: 'tok_nothing' }),
      CUSTOMER,
    );
    expect(reply).toMatchObject({
      status: 400,
      body: { detail: 'No such card token: tok_nothing' },
    });
  });

  it.each([
    ['missing', {}, 'X-Forwarded-For is missing'],
    ['not an address', { 'x-forwarded-for': 'customer-laptop' }, 'must be the end customer'],
    [
      'an address with a zone index',
      { 'x-forwarded-for': 'fe80::1%eth0' },
      'must be the end customer',
    ],
    ['the calling server’s own address', { 'x-forwarded-for': '127.0.0.1' }, 'calling server'],
    [
      'the calling server’s own address (IPv4-mapped)',
      { 'x-forwarded-for': '::ffff:127.0.0.1' },
      'calling server',
    ],
  ])('answers 400 when X-Forwarded-For is %s, and writes nothing', async (_, headers, detail) => {
    const { walletId } = await createUserWithWallet(api);
    const reply = await api.post(COMPLETE, submission(walletId), headers);
    expect(reply.status).toBe(400);
    expect(reply.body.detail).toContain(detail);
    expect(await findPayoutAccount(engine.pool, scope(), walletId)).toBeNull();
    expect(await workflowExists(walletId)).toBe(false);
    expect((await api.get(stateOf(walletId))).status).toBe(404);
  });

  it.each([
    [
      'a lower-case country',
      { individual: individual({ address: { country: 'sl' } }) },
      'individual.address.country',
    ],
    [
      'a date of birth not on the calendar',
      { individual: individual({ dob: { day: 31, month: 2, year: 1990 } }) },
      'individual.dob',
    ],
    ['a bad email', { individual: individual({ email: 'not-an-email' }) }, 'individual.email'],
    [
      'a phone number not in E.164',
      { individual: individual({ phone: '076 123 456' }) },
      'individual.phone',
    ],
    ['no last name', { individual: individual({ last_name: undefined }) }, 'individual.last_name'],
    ['an unknown identity field', { individual: individual({ ssn_last_4: '1234' }) }, 'individual'],
    [
      'an mcc that is not four digits',
      { business_profile: { mcc: '57a4', product_description: 'x' } },
      'business_profile.mcc',
    ],
    [
      'no product description',
      { business_profile: { mcc: '5734' } },
      'business_profile.product_description',
    ],
  ])('answers 422 for %s, and writes nothing', async (_, overrides, field) => {
    const { walletId } = await createUserWithWallet(api);
    const reply = await api.post(COMPLETE, submission(walletId, overrides), CUSTOMER);
    expect(reply.status).toBe(422);
    expect(reply.body.detail).toContain(field);
    expect(await findPayoutAccount(engine.pool, scope(), walletId)).toBeNull();
    expect(await workflowExists(walletId)).toBe(false);
  });

  it('answers 404 for a wallet that does not exist and 403 for another application’s', async () => {
    const missing = await api.post(
      COMPLETE,
      submission('00000000-0000-4000-8000-000000000000'),
      CUSTOMER,
    );
    expect(missing.status).toBe(404);
    const { walletId } = await createUserWithWallet(api);
    expect((await api.post(COMPLETE, submission(walletId), CUSTOMER)).status).toBe(200);
    const stranger = clientFor(engine.url, other);
    expect((await stranger.post(COMPLETE, submission(walletId), CUSTOMER)).status).toBe(403);
    expect((await stranger.get(stateOf(walletId))).status).toBe(403);
    expect((await stranger.post(syncOf(walletId))).status).toBe(403);
    expect(
      (
        await upload(
          walletId,
          { file: { content: PDF, type: 'application/pdf' }, purpose: 'identity_document' },
          other,
        )
      ).status,
    ).toBe(403);
  });

  it('answers 503 in Live Mode without the Stripe keys, and writes nothing', async () => {
    const live = clientFor(engine.url, app, 'live');
    const { walletId } = await createUserWithWallet(live);
    const reply = await live.post(COMPLETE, submission(walletId), CUSTOMER);
    expect(reply.status).toBe(503);
    expect(
      await findPayoutAccount(engine.pool, { applicationId: app.id, mode: 'live' }, walletId),
    ).toBeNull();
  });
});

describe('verification document upload', () => {
  let walletId: string;
  beforeAll(async () => {
    ({ walletId } = await createUserWithWallet(api));
    const reply = await api.post(
      COMPLETE,
      submission(walletId, { individual: individual({ id_number: '987654321' }) }),
      CUSTOMER,
    );
    expect(reply.status).toBe(202);
  });

  it('answers 404 before the first submission, storing nothing', async () => {
    const fresh = await createUserWithWallet(api);
    const reply = await upload(fresh.walletId, {
      file: { content: PDF, type: 'application/pdf' },
      purpose: 'identity_document',
    });
    expect(reply.status).toBe(404);
    expect((await api.post(syncOf(fresh.walletId))).status).toBe(404);
    expect(await countPayoutDocuments(engine.pool, fresh.walletId)).toBe(0);
  });

  it.each([
    ['a GIF', { content: GIF, type: 'image/gif' }],
    ['a GIF declared as a PNG', { content: GIF, type: 'image/png' }],
    ['a PNG declared as a PDF', { content: PNG, type: 'application/pdf' }],
    ['an empty file', { content: Buffer.alloc(0), type: 'image/png' }],
  ])('refuses %s with 400 before storing anything', async (_, file) => {
    const reply = await upload(walletId, { file, purpose: 'identity_document' });
    expect(reply).toEqual({
      status: 400,
      body: { detail: 'The file must be a JPEG, PNG or PDF' },
    });
    expect(await countPayoutDocuments(engine.pool, walletId)).toBe(0);
  });

  it('refuses a file over 10 MiB with 413 while it streams, storing nothing', async () => {
    const big = Buffer.concat([PDF, Buffer.alloc(10 * 1024 * 1024)]);
    const reply = await upload(walletId, {
      file: { content: big, type: 'application/pdf' },
      purpose: 'identity_document',
    });
    expect(reply).toEqual({ status: 413, body: { detail: 'The document is larger than 10 MiB' } });
    expect(await countPayoutDocuments(engine.pool, walletId)).toBe(0);
    // The connection closed after the refusal; the next request still gets through.
    expect((await api.get(stateOf(walletId))).status).toBe(200);
  });

  it('answers 422 for a missing file or another purpose, and 400 for a file sent as text or a body that is not multipart', async () => {
    const noFile = await upload(walletId, { purpose: 'identity_document' });
    expect(noFile).toEqual({ status: 422, body: { detail: 'file: required' } });
    const wrongPurpose = await upload(walletId, {
      file: { content: PDF, type: 'application/pdf' },
      purpose: 'selfie',
    });
    expect(wrongPurpose).toEqual({
      status: 422,
      body: { detail: 'purpose: must be identity_document' },
    });
    const form = new FormData();
    form.append('file', '%PDF-1.4 sent as text');
    form.append('purpose', 'identity_document');
    const asText = await fetch(`${engine.url}${documentOf(walletId)}`, {
      method: 'POST',
      headers: {
        'api-key': app.credentials.test.apiKey,
        'secret-key': app.credentials.test.secretKey,
      },
      body: form,
    });
    expect(asText.status).toBe(400);
    expect(((await asText.json()) as { detail: string }).detail).toContain('file part');
    const json = await api.post(documentOf(walletId), { file: 'aGVsbG8=' });
    expect(json.status).toBe(400);
    expect(json.body.detail).toContain('multipart/form-data');
    expect(await countPayoutDocuments(engine.pool, walletId)).toBe(0);
  });

  it('refuses a form with more parts than it reads (400, nothing stored) rather than dropping purpose', async () => {
    const crowded = await upload(walletId, {
      extra: [1, 2, 3, 4].map((n) => [`note${n}`, 'x']),
      file: { content: PDF, type: 'application/pdf' },
      purpose: 'identity_document',
    });
    expect(crowded).toEqual({
      status: 400,
      body: { detail: 'The form has too many parts: send the fields file and purpose only' },
    });
    expect(await countPayoutDocuments(engine.pool, walletId)).toBe(0);
  });

  it('takes a PDF and answers the onboarding result: the document now pending verification', async () => {
    const reply = await upload(walletId, {
      file: { content: PDF, type: 'application/pdf', name: 'id.pdf' },
      purpose: 'identity_document',
    });
    expect(reply.status).toBe(202);
    expect(reply.body).toMatchObject({
      currently_due: [],
      pending_verification: [DOCUMENT_DUE],
      external_account_added: true,
    });
    expect(await countPayoutDocuments(engine.pool, walletId)).toBe(1);
  });

  it('refuses a document past the wallet’s quota with 400, storing nothing', async () => {
    const pdf = { file: { content: PDF, type: 'application/pdf' }, purpose: 'identity_document' };
    expect((await upload(walletId, pdf)).status).toBe(202);
    expect(await countPayoutDocuments(engine.pool, walletId)).toBe(2);
    expect(await upload(walletId, pdf)).toEqual({
      status: 400,
      body: {
        detail: `This wallet keeps at most 2 verification documents of ${50 * 1024 * 1024} bytes in all; no more can be uploaded`,
      },
    });
    expect(await countPayoutDocuments(engine.pool, walletId)).toBe(2);
    // The bytes count too: a document that would pass them is not stored either.
    const stored = () =>
      insertPayoutDocument(
        engine.pool,
        { walletId, contentType: 'application/pdf', content: PDF },
        { documents: 10, bytes: 3 * PDF.length - 1 },
      );
    expect(await stored()).toBeNull();
    expect(await countPayoutDocuments(engine.pool, walletId)).toBe(2);
  });
});

describe('the onboarding answers and the OpenAPI document', () => {
  it('match the documented schema of each operation and status', async () => {
    const doc = (await clientFor(engine.url, null).get('/api/v1/openapi.json')).body;
    const ajv = new Ajv2020({ strict: false });
    const conforms = (method: string, path: string, reply: { status: number; body: unknown }) => {
      const schema =
        doc.paths[path][method].responses[String(reply.status)].content['application/json'].schema;
      const validate = ajv.compile({ ...schema, components: doc.components });
      expect({
        path,
        status: reply.status,
        valid: validate(reply.body),
        errors: validate.errors,
      }).toEqual({ path, status: reply.status, valid: true, errors: null });
    };
    const wallet = '/api/v1/transactions/wallet/{wallet_id}';
    const { walletId } = await createUserWithWallet(api);
    const body = submission(walletId, { individual: individual({ id_number: '55' }) });
    conforms('post', COMPLETE, await api.post(COMPLETE, body, CUSTOMER));
    conforms('post', COMPLETE, await api.post(COMPLETE, body));
    conforms('get', `${wallet}/onboarding`, await api.get(stateOf(walletId)));
    const uploaded = await upload(walletId, {
      file: { content: PNG, type: 'image/png' },
      purpose: 'identity_document',
    });
    expect(uploaded.status).toBe(202);
    conforms('post', `${wallet}/verification-document`, uploaded);
    conforms(
      'post',
      `${wallet}/verification-document`,
      await upload(walletId, { purpose: 'identity_document' }),
    );
    const synced = await api.post(syncOf(walletId));
    expect(synced.status).toBe(200);
    conforms('post', `${wallet}/onboarding/sync`, synced);
  });
});

describe('the operator guide’s onboarding query', () => {
  /** Visibility is eventually consistent: ask until the expected ids show up. */
  const find = (query: string, expected: string[]) =>
    listWorkflowIds(engine.temporal, query, (ids) => ids.join() === [...expected].sort().join());

  it('lists the onboardings still open, not the verified ones', async () => {
    const open = await createUserWithWallet(api);
    const done = await createUserWithWallet(api);
    const due = submission(open.walletId, { individual: individual({ id_number: '1' }) });
    expect((await api.post(COMPLETE, due, CUSTOMER)).status).toBe(202);
    expect((await api.post(COMPLETE, submission(done.walletId), CUSTOMER)).status).toBe(200);
    await engine.temporal.workflow.getHandle(workflowIds.onboarding(done.walletId)).result();
    const wallets = `("${open.walletId}", "${done.walletId}")`;
    const query = `WorkflowType = "onboardingWorkflow" AND ExecutionStatus = "Running" AND WalletId IN ${wallets}`;
    expect(await find(query, [workflowIds.onboarding(open.walletId)])).toEqual([
      workflowIds.onboarding(open.walletId),
    ]);
  });
});
