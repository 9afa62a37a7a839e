export { transferWorkflow } from './transfer';
