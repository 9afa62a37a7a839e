import { patched } from '@temporalio/workflow';

/**
 * Whether a notification claiming an outcome is only a reason to ask the provider: anyone who can
 * reach Temporal can send `notify`, so money moves on the provider's answer. Executions recorded
 * before this settled on the message, and replay that way (no `patched` marker).
 */
export function asksProviderOnNotify(claimed: string): boolean {
  return claimed !== 'pending' && patched('notify-asks-provider');
}
