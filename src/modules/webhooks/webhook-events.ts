/** Event names as the interface spells them (kyc_steep_update is spelled so on purpose). */
export const WEBHOOK_EVENTS = {
  transferUpdate: 'transfer_update',
  kycStepUpdate: 'kyc_steep_update',
  test: 'webhook_test',
} as const;

export type WebhookEventName = (typeof WEBHOOK_EVENTS)[keyof typeof WEBHOOK_EVENTS];

/** backStatus and newStatus of a transfer_update. */
export const TRANSFER_UPDATE_STATUSES = ['PENDING', 'ACCEPTED', 'REJECTED'] as const;
export type TransferUpdateStatus = (typeof TRANSFER_UPDATE_STATUSES)[number];

/** The NOTIFY channel the outbox trigger speaks on; payload `<eventId>.<generation>`. */
export const WEBHOOK_NOTIFY_CHANNEL = 'webhook_events';

export const deliveryJobId = (eventId: string, generation: number) => `${eventId}.${generation}`;
