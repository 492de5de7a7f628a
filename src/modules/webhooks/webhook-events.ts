/** Event names as the interface spells them (kyc_steep_update is spelled so on purpose). */
export const WEBHOOK_EVENTS = {
  transferUpdate: 'transfer_update',
  kycStepUpdate: 'kyc_steep_update',
  test: 'webhook_test',
} as const;

export type WebhookEventName = (typeof WEBHOOK_EVENTS)[keyof typeof WEBHOOK_EVENTS];

/**
 * The NOTIFY channel on which committed outbox events are announced to the relay (WebhookAnnouncer, decision
 * 0039); the payload is a comma list of notices.
 */
export const WEBHOOK_NOTIFY_CHANNEL = 'webhook_events';

/** An event's notice: `<eventId>.<generation>` (generation 0 for an event just written). */
export const eventNotice = (eventId: string, generation = 0) => `${eventId}.${generation}`;

export const deliveryJobId = (eventId: string, generation: number) => `${eventId}.${generation}`;
