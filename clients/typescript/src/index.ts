export {
  createWalletClient,
  type Answer,
  type Batch,
  type BatchItem,
  type BatchRequest,
  type BatchWait,
  type CursorPath,
  type ExportQuery,
  type PagedPath,
  type WalletClient,
  type WalletClientOptions,
} from './client.js';
export { WalletApiError } from './errors.js';
export { IDEMPOTENT_OPERATIONS } from './operations.js';
export { isReplayable, retryAfterMs, retryingFetch, type RetryOptions } from './retry.js';
export { verifyWebhook, WebhookVerificationError, type WebhookEvent } from './webhooks.js';
export type { components, operations, paths } from './schema.js';
