export { transferWorkflow } from './transfer';
export { mobileMoneyDepositWorkflow } from './deposit';
export { cardDepositWorkflow } from './card-deposit';
export { escrowWorkflow } from './escrow';
export { maintenanceWorkflow } from './maintenance';
export { mobileMoneyCashoutWorkflow } from './cashout';
export { cardPayoutWorkflow } from './card-payout';
export { cardRefundWorkflow } from './card-refund';
export { webhookDeliveryWorkflow, webhookRelayWorkflow } from './webhook';
export { onboardingWorkflow } from './onboarding';
export { reconciliationWorkflow } from './reconciliation';
export { disputeWorkflow } from './dispute';
export {
  reconciliationRunWorkflow,
  reconExceptionWorkflow,
  dailyReconciliationWorkflow,
} from './provider-reconciliation';
export { reconAdjustWorkflow } from './recon-adjust';
export { batchWorkflow } from './batch';
