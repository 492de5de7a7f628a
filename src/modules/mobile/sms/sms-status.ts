/**
 * Statuses this service sets itself; every other status is a delivery
 * receipt's `stat`, stored as the provider sent it (an open set).
 */
export const SMS_STATUS = {
  /** Accepted by this service, waiting for the provider (the link may be down). */
  queued: 'QUEUED',
  /** The provider took it (submit_sm_resp OK); no receipt yet. */
  enroute: 'ENROUTE',
  /** The provider refused the submission for good (error_code says why). */
  rejected: 'REJECTD',
  /** The answer for an id this application never sent (interface: SMSStatusNotFoundResponse). */
  unknown: 'UNKNOWN',
} as const;
