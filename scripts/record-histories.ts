/**
 * Records the workflow histories that test/workflow/replay.test.ts replays against the current
 * workflow code: one representative execution per path of each workflow type, run on Temporal's
 * time-skipping test server with mocked activities, written as Temporal's JSON history format
 * (the same as `temporal workflow show --output json`) to test/fixtures/histories/<name>.json.
 *
 *   node_modules/.bin/node --import tsx scripts/record-histories.ts [name ...]
 *
 * Re-record only when a workflow change is deliberately not replay-compatible and running
 * executions are taken care of (a `patched()` version branch, or a new workflow type): see the
 * header of test/workflow/replay.test.ts. Re-recording to make a failing replay test pass hides
 * exactly the break it exists to catch.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { WithStartWorkflowOperation, type WorkflowHandle } from '@temporalio/client';
import { ApplicationFailure, type SearchAttributePair } from '@temporalio/common';
import type { History } from '@temporalio/common/lib/proto-utils';
import { temporal } from '@temporalio/proto';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { bundleWorkflowCode, DefaultLogger, Runtime, Worker } from '@temporalio/worker';
import { format, resolveConfig } from 'prettier';
import type { Activities } from '../workflows/activities-types';
import { mobileMoneyDepositWorkflow } from '../workflows/deposit';
import { escrowWorkflow } from '../workflows/escrow';
import { maintenanceWorkflow } from '../workflows/maintenance';
import {
  depositUpdates,
  depositWorkflowId,
  escrowUpdates,
  escrowWorkflowId,
  SEARCH_ATTRIBUTE_DEFINITIONS,
  SearchAttributes,
  workflowIds,
  type DepositInput,
  type DepositOpened,
  type EscrowStepResult,
  type HoldInput,
  type TransferInput,
} from '../workflows/shared';
import { transferWorkflow } from '../workflows/transfer';
import { findBinary } from '../harness/temporal';

const rootDir = path.resolve(__dirname, '..');
const HISTORIES_DIR = path.join(rootDir, 'test', 'fixtures', 'histories');

/**
 * `historyToJSON` of @temporalio/common/lib/proto-utils, with protobufjs's ProtoJSON taken from
 * the copy of protobufjs that built @temporalio/proto's types. In this install @temporalio/common
 * and @temporalio/proto each have their own protobufjs 8 (the hoisted one is grpc's 7), so the
 * SDK's helper fails its `instanceof Type` check with "type must be a Type".
 */
async function historyToJSON(history: History): Promise<string> {
  const file = require.resolve('protobufjs/ext/protojson', {
    paths: [path.dirname(require.resolve('@temporalio/proto'))],
  });
  type ProtoJson = { toJson: (type: unknown, message: unknown) => unknown };
  const loaded = (await import(file)) as ProtoJson & { default?: ProtoJson };
  const protojson = loaded.default ?? loaded;
  const type = temporal.api.history.v1.History;
  return JSON.stringify(protojson.toJson(type, type.fromObject(history)), null, 2);
}

const THIRTY_MINUTES = 30 * 60 * 1000;
const SEVEN_DAYS = 7 * 24 * 60 * 60 * 1000;

type Mocks = Partial<Activities>;
type Recording = {
  /** The fixture's file name, without `.json`. */
  name: string;
  activities: Mocks;
  /** Runs the execution to its end and returns its handle. */
  run: (ctx: { env: TestWorkflowEnvironment; taskQueue: string }) => Promise<WorkflowHandle>;
};

// Fixed ids, so that a re-recording differs from the last one only where the workflow does.
const APP = 'a0000000-0000-4000-8000-000000000001';
const SENDER = 'a0000000-0000-4000-8000-000000000002';
const RECIPIENT = 'a0000000-0000-4000-8000-000000000003';
const OTHER_WALLET = 'a0000000-0000-4000-8000-000000000004';
const id = (n: number) => `b0000000-0000-4000-8000-${n.toString().padStart(12, '0')}`;

/** The search attributes the API starts every payment workflow with: they drive the upserts. */
function paymentAttributes(type: string, wallets: string[]): SearchAttributePair[] {
  return [
    { key: SearchAttributes.ApplicationId, value: APP },
    { key: SearchAttributes.WalletId, value: wallets },
    { key: SearchAttributes.PaymentType, value: type },
    { key: SearchAttributes.PaymentStatus, value: 'pending' },
  ];
}

const transferInput = (transactionId: string): TransferInput => ({
  transactionId,
  applicationId: APP,
  mode: 'test',
  fromWalletId: SENDER,
  toWalletId: RECIPIENT,
  amount: '1250',
  description: 'rent',
});

function transfer(name: string, transactionId: string, mocks: Mocks): Recording {
  return {
    name,
    activities: mocks,
    run: async ({ env, taskQueue }) => {
      const handle = await env.client.workflow.start(transferWorkflow, {
        workflowId: workflowIds.transfer(transactionId),
        taskQueue,
        args: [transferInput(transactionId)],
        typedSearchAttributes: paymentAttributes('transfer', [SENDER, RECIPIENT]),
      });
      await handle.result();
      return handle;
    },
  };
}

const depositInput = (transactionId: string): DepositInput => ({
  transactionId,
  applicationId: APP,
  mode: 'test',
  walletId: SENDER,
  amount: '10000',
});

function depositMocks(env: () => TestWorkflowEnvironment, checked: 'pending' | 'completed'): Mocks {
  return {
    openDeposit: async (input: DepositInput): Promise<DepositOpened> => ({
      status: 'opened',
      transactionId: input.transactionId,
      paymentCode: {
        id: `pmc_${input.transactionId}`,
        code: '*715*123456#',
        amount: '10100',
        currency: 'SLE',
        instructions: 'Dial *715*123456# to pay',
        status: 'pending',
        expiresAt: new Date((await env().currentTimeMs()) + THIRTY_MINUTES).toISOString(),
      },
      deposit: {
        walletId: input.walletId,
        amount: input.amount,
        totalAmountPaid: '10100',
        providerFee: '100',
        applicationFee: '0',
      },
    }),
    checkPaymentCode: () => Promise.resolve(checked),
    completeDeposit: () => Promise.resolve(),
    closeDeposit: () => Promise.resolve(),
  };
}

function deposit(
  name: string,
  transactionId: string,
  mocks: Mocks,
  then: (handle: WorkflowHandle<typeof mobileMoneyDepositWorkflow>) => Promise<unknown>,
): Recording {
  return {
    name,
    activities: mocks,
    run: async ({ env, taskQueue }) => {
      const start = new WithStartWorkflowOperation(mobileMoneyDepositWorkflow, {
        workflowId: depositWorkflowId(transactionId),
        taskQueue,
        args: [depositInput(transactionId)],
        workflowIdConflictPolicy: 'USE_EXISTING',
        typedSearchAttributes: paymentAttributes('deposit', [SENDER]),
      });
      await env.client.workflow.executeUpdateWithStart(depositUpdates.open, {
        startWorkflowOperation: start,
      });
      const handle = await start.workflowHandle();
      await then(handle);
      await handle.result();
      return handle;
    },
  };
}

/** The escrow activities over one in-memory hold. */
function escrowMocks(): Mocks {
  let held = 0n;
  const notHeld = () =>
    ApplicationFailure.nonRetryable(
      'The escrow transaction is not in held status',
      'invalid_request',
    );
  return {
    holdFunds: (input: HoldInput): Promise<EscrowStepResult> => {
      held = BigInt(input.amount);
      return Promise.resolve({
        status: 'done',
        transactionId: input.holdId,
        remaining: input.amount,
      });
    },
    releaseFunds: (input): Promise<EscrowStepResult> => {
      if (held === 0n) return Promise.reject(notHeld());
      const amount = input.amount === null ? held : BigInt(input.amount);
      if (amount > held) {
        return Promise.reject(
          ApplicationFailure.nonRetryable(
            'Release amount exceeds the held amount',
            'invalid_request',
          ),
        );
      }
      held -= amount;
      return Promise.resolve({
        status: 'done',
        transactionId: input.releaseId,
        remaining: held.toString(),
      });
    },
    refundFunds: (input): Promise<EscrowStepResult> => {
      if (held === 0n) return Promise.reject(notHeld());
      held = 0n;
      return Promise.resolve({ status: 'done', transactionId: input.refundId, remaining: '0' });
    },
  };
}

function escrow(
  name: string,
  holdId: string,
  expiresInMs: number | null,
  then: (handle: WorkflowHandle<typeof escrowWorkflow>) => Promise<unknown>,
  overrides: Mocks = {},
): Recording {
  return {
    name,
    activities: { ...escrowMocks(), ...overrides },
    run: async ({ env, taskQueue }) => {
      const now = await env.currentTimeMs();
      const input: HoldInput = {
        holdId,
        applicationId: APP,
        mode: 'test',
        walletId: SENDER,
        amount: '1000',
        description: 'order 42',
        recipientWalletId: RECIPIENT,
        expiresAt: expiresInMs === null ? null : new Date(now + expiresInMs).toISOString(),
      };
      const start = new WithStartWorkflowOperation(escrowWorkflow, {
        workflowId: escrowWorkflowId(holdId),
        taskQueue,
        args: [input],
        workflowIdConflictPolicy: 'USE_EXISTING',
        typedSearchAttributes: paymentAttributes('escrow_hold', [SENDER, RECIPIENT]),
      });
      await env.client.workflow.executeUpdateWithStart(escrowUpdates.hold, {
        startWorkflowOperation: start,
      });
      const handle = await start.workflowHandle();
      await then(handle);
      await handle.result();
      return handle;
    },
  };
}

function recordings(env: () => TestWorkflowEnvironment): Recording[] {
  return [
    transfer('transfer-completed', id(1), {
      transferFunds: (input) => Promise.resolve({ transactionId: input.transactionId }),
    }),
    transfer('transfer-declined', id(2), {
      transferFunds: () =>
        Promise.reject(ApplicationFailure.nonRetryable('Insufficient funds', 'insufficient_funds')),
    }),
    deposit('deposit-paid-notify', id(3), depositMocks(env, 'pending'), (handle) =>
      handle.executeUpdate(depositUpdates.notify, { args: [{ status: 'completed' }] }),
    ),
    // Nobody pays: the code expires after 30 minutes, the last provider check says pending.
    deposit('deposit-expired', id(4), depositMocks(env, 'pending'), () => Promise.resolve()),
    deposit('deposit-sync', id(5), depositMocks(env, 'completed'), (handle) =>
      handle.executeUpdate(depositUpdates.sync),
    ),
    escrow('escrow-partial-release-refund', id(6), null, async (handle) => {
      await handle.executeUpdate(escrowUpdates.release, {
        args: [{ releaseId: id(7), recipientWalletId: RECIPIENT, amount: '400' }],
      });
      await handle.executeUpdate(escrowUpdates.refund, {
        args: [{ refundId: id(8), reason: 'requested' }],
      });
    }),
    // A release to a wallet the hold did not name: WalletId gains it (a versioned change).
    escrow('escrow-release-to-another-wallet', id(12), null, async (handle) => {
      await handle.executeUpdate(escrowUpdates.release, {
        args: [{ releaseId: id(13), recipientWalletId: OTHER_WALLET, amount: null }],
      });
    }),
    escrow('escrow-hold-declined', id(11), null, () => Promise.resolve(), {
      holdFunds: () =>
        Promise.reject(ApplicationFailure.nonRetryable('Insufficient funds', 'insufficient_funds')),
    }),
    // A partial release, then the hold expires after 7 days and refunds the rest by itself.
    escrow('escrow-expired', id(9), SEVEN_DAYS, (handle) =>
      handle.executeUpdate(escrowUpdates.release, {
        args: [{ releaseId: id(10), recipientWalletId: RECIPIENT, amount: '250' }],
      }),
    ),
    {
      name: 'maintenance',
      activities: {
        pruneExpiredRows: () => Promise.resolve({ rateLimitWindows: 2, idempotencyKeys: 3 }),
      },
      run: async ({ env, taskQueue }) => {
        const handle = await env.client.workflow.start(maintenanceWorkflow, {
          workflowId: 'maintenance',
          taskQueue,
        });
        await handle.result();
        return handle;
      },
    },
  ];
}

/** The search attributes the workflows upsert, as the development server registers them. */
async function registerSearchAttributes(env: TestWorkflowEnvironment): Promise<void> {
  const types = temporal.api.enums.v1.IndexedValueType;
  const typeOf: Record<string, temporal.api.enums.v1.IndexedValueType> = {
    Keyword: types.INDEXED_VALUE_TYPE_KEYWORD,
    KeywordList: types.INDEXED_VALUE_TYPE_KEYWORD_LIST,
  };
  await env.connection.operatorService.addSearchAttributes({
    namespace: env.namespace ?? 'default',
    searchAttributes: Object.fromEntries(
      Object.entries(SEARCH_ATTRIBUTE_DEFINITIONS).map(([key, type]) => [key, typeOf[type]!]),
    ),
  });
}

async function main(): Promise<void> {
  Runtime.install({ logger: new DefaultLogger('ERROR') });
  const { code } = await bundleWorkflowCode({
    workflowsPath: require.resolve('../workflows'),
    logger: new DefaultLogger('ERROR'),
  });
  const env = await TestWorkflowEnvironment.createTimeSkipping({
    server: { executable: { type: 'existing-path', path: findBinary('temporal-test-server') } },
  });
  try {
    await registerSearchAttributes(env);
    // Overwrites only the fixtures it records: a history kept by hand (the old path of a
    // `patched()` change, say) stays and keeps being replayed.
    await mkdir(HISTORIES_DIR, { recursive: true });
    const prettier = await resolveConfig(path.join(HISTORIES_DIR, 'x.json'));
    // `-- name ...` records only those fixtures (a change to one workflow type re-records it alone).
    const only = process.argv.slice(2);
    for (const recording of recordings(() => env)) {
      if (only.length && !only.includes(recording.name)) continue;
      const taskQueue = `record-${recording.name}`;
      const worker = await Worker.create({
        connection: env.nativeConnection,
        taskQueue,
        workflowBundle: { code },
        activities: recording.activities,
      });
      const handle = await worker.runUntil(recording.run({ env, taskQueue }));
      const history = await handle.fetchHistory();
      const file = path.join(HISTORIES_DIR, `${recording.name}.json`);
      await writeFile(
        file,
        await format(await historyToJSON(history), { ...prettier, filepath: file }),
        'utf8',
      );
      console.log(`${path.relative(rootDir, file)}: ${history.events?.length ?? 0} events`);
    }
  } finally {
    await env.teardown();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
