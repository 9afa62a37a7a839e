export { transferWorkflow } from './transfer';
export { mobileMoneyDepositWorkflow } from './deposit';
export { escrowWorkflow } from './escrow';
export { maintenanceWorkflow } from './maintenance';
