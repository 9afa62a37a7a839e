import { patched } from '@temporalio/workflow';

/**
 * Whether a provider's notification that claims an outcome is only a reason to ask the
 * provider: anyone who can reach Temporal can send a `notify` update, so money moves on what
 * the provider itself answers, never on the message. Executions recorded before this settled
 * on the message: they replay without asking (the `patched` marker is absent).
 */
export function asksProviderOnNotify(claimed: string): boolean {
  return claimed !== 'pending' && patched('notify-asks-provider');
}
