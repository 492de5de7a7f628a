/** Every queue and job name, in one place. */
export const QUEUES = {
  maintenance: 'maintenance',
  webhooks: 'webhooks',
  /** The events feed's retention (its own queue: one processor per queue takes every job of it). */
  events: 'events',
  kyc: 'kyc',
  /** The removal of stored document bytes that no row names (decision 0055). */
  documents: 'documents',
  clearing: 'clearing',
  sms: 'sms',
} as const;

export type QueueName = (typeof QUEUES)[keyof typeof QUEUES];

export const JOBS = {
  pruneUsedAssertions: 'prune-used-assertions',
  pruneEvents: 'prune-events',
  reapDocuments: 'reap-documents',
  deliverWebhook: 'deliver',
  /** The events of one relayed batch of notices (fresh events), delivered by one job. */
  deliverWebhooks: 'deliver-batch',
  verifyKycStep: 'verify-kyc-step',
  presentTransfer: 'present-transfer',
  settleTransfer: 'settle-transfer',
  submitSms: 'submit-sms',
  simulatedSmsReceipt: 'simulated-sms-receipt',
} as const;
