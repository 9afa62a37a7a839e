export { transferWorkflow } from './transfer';
export { mobileMoneyDepositWorkflow } from './deposit';
