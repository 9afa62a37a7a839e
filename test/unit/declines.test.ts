import {
  ActivityFailure,
  ApplicationFailure,
  RetryState,
  TimeoutFailure,
  TimeoutType,
} from '@temporalio/common';
import { AppError, ERROR_MESSAGES, ERROR_STATUS, unlessDeclined } from '../../src/api/errors';
import { ERROR_CODES, isErrorCode } from '../../src/domain/errors';
import { asDeclined, exhausted } from '../../src/workflows/declines';

const wrapped = (cause: Error, retryState: RetryState = RetryState.NON_RETRYABLE_FAILURE) =>
  new ActivityFailure('Activity task failed', 'transferFunds', '1', retryState, undefined, cause);

describe('asDeclined', () => {
  it.each([
    [
      'a bare failure with a detail',
      ApplicationFailure.nonRetryable('Wallets hold different currencies', 'invalid_request'),
      'invalid_request',
      'Wallets hold different currencies',
    ],
    [
      'a wrapped failure with a detail',
      wrapped(ApplicationFailure.nonRetryable('Insufficient funds', 'insufficient_funds')),
      'insufficient_funds',
      'Insufficient funds',
    ],
    [
      'a failure whose message is its code (no detail)',
      wrapped(ApplicationFailure.nonRetryable('wallet_disabled', 'wallet_disabled')),
      'wallet_disabled',
      null,
    ],
  ])('reads %s', (_name, error, code, detail) => {
    expect(asDeclined(error)).toEqual({ status: 'declined', code, detail });
  });

  it.each([
    ['a retryable failure', ApplicationFailure.retryable('busy', 'insufficient_funds')],
    ['an unknown type', ApplicationFailure.nonRetryable('boom', 'SomethingElse')],
    ['a failure without a type', ApplicationFailure.create({ message: 'x', nonRetryable: true })],
    ['a plain error', new Error('Insufficient funds')],
  ])('is not fooled by %s', (_name, error) => {
    expect(asDeclined(error)).toBeNull();
  });
});

describe('exhausted', () => {
  const fault = ApplicationFailure.retryable('connect ECONNREFUSED', 'Error');
  it.each([
    ['an activity whose attempts ran out', wrapped(fault, RetryState.MAXIMUM_ATTEMPTS_REACHED)],
    // A local activity's failure reaches the workflow bare, once its retry has ended.
    ['a local activity that failed its last attempt', fault],
    [
      'a local activity whose last attempt timed out',
      new TimeoutFailure('Activity timed out', undefined, TimeoutType.START_TO_CLOSE),
    ],
  ])('is true of %s', (_name, error) => {
    expect(exhausted(error)).toBe(true);
  });

  it.each([
    [
      'a decline',
      wrapped(ApplicationFailure.nonRetryable('Insufficient funds', 'insufficient_funds')),
    ],
    ['a bare decline', ApplicationFailure.nonRetryable('Card declined', 'card_declined')],
    ['a non-retryable fault', ApplicationFailure.nonRetryable('bad state', 'Error')],
    ['an activity still retried when canceled', wrapped(fault, RetryState.CANCEL_REQUESTED)],
  ])('is false of %s', (_name, error) => {
    expect(exhausted(error)).toBe(false);
  });
});

describe('the edge’s answer to a decline', () => {
  it('gives every code a status and a message', () => {
    for (const code of ERROR_CODES) {
      expect(isErrorCode(code)).toBe(true);
      expect(ERROR_STATUS[code]).toBeGreaterThanOrEqual(400);
      expect(ERROR_MESSAGES[code]).not.toBe('');
    }
    expect(Object.keys(ERROR_STATUS).sort()).toEqual([...ERROR_CODES].sort());
    expect(isErrorCode('toString')).toBe(false);
  });

  it.each([
    [
      { status: 'declined', code: 'wallet_disabled', detail: null } as const,
      403,
      'Wallet is disabled',
    ],
    [
      { status: 'declined', code: 'insufficient_funds', detail: null } as const,
      400,
      'Insufficient funds',
    ],
    [
      { status: 'declined', code: 'release_exceeds_hold', detail: null } as const,
      400,
      'Release amount exceeds the held amount',
    ],
    [
      {
        status: 'declined',
        code: 'validation_failed',
        detail: 'amount must be greater than 0',
      } as const,
      422,
      'amount must be greater than 0',
    ],
  ])('answers %p with %p %p', (declined, status, detail) => {
    let thrown: unknown;
    try {
      unlessDeclined(declined);
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(AppError);
    expect(thrown).toMatchObject({ code: declined.code, status, detail });
  });

  it('returns any other answer as it is', () => {
    const done = { status: 'done', transactionId: 't', remaining: '0' } as const;
    expect(unlessDeclined(done)).toBe(done);
  });
});
