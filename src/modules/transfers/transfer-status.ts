import type { TransferUpdateStatus } from '#modules/webhooks/webhook-events.js';

/**
 * The transfer status machine (docs/decisions/0013-transfers.md):
 *   COMMITING → INICIADO → EN_CURSO → ACREDITADO
 *   COMMITING → ACREDITADO                       (internal: settled in the same transaction)
 *   INICIADO | EN_CURSO → ERROR_DATOS | SIN_GARANTIA | ERROR_ACREDITACION   (final)
 */
export const TRANSFER_STATUSES = [
  'COMMITING',
  'INICIADO',
  'EN_CURSO',
  'ERROR_DATOS',
  'SIN_GARANTIA',
  'ERROR_ACREDITACION',
  'ACREDITADO',
] as const;
export type TransferStatus = (typeof TRANSFER_STATUSES)[number];

export const FAILURE_STATUSES = ['ERROR_DATOS', 'SIN_GARANTIA', 'ERROR_ACREDITACION'] as const;
export const IN_FLIGHT_STATUSES: readonly TransferStatus[] = ['COMMITING', 'INICIADO', 'EN_CURSO'];

const NEXT: Record<TransferStatus, readonly TransferStatus[]> = {
  COMMITING: ['INICIADO', 'ACREDITADO', 'ERROR_DATOS'],
  INICIADO: ['EN_CURSO', 'ACREDITADO', 'ERROR_DATOS', 'SIN_GARANTIA', 'ERROR_ACREDITACION'],
  EN_CURSO: ['ACREDITADO', 'ERROR_DATOS', 'SIN_GARANTIA', 'ERROR_ACREDITACION'],
  ERROR_DATOS: [],
  SIN_GARANTIA: [],
  ERROR_ACREDITACION: [],
  ACREDITADO: [],
};

export function canMove(from: TransferStatus, to: TransferStatus): boolean {
  return NEXT[from].includes(to);
}

export function isFinal(status: TransferStatus): boolean {
  return NEXT[status].length === 0;
}

/** The webhook vocabulary (transfer_update backStatus/newStatus): PENDING, ACCEPTED, REJECTED. */
export function webhookStatus(status: TransferStatus): TransferUpdateStatus {
  if (status === 'ACREDITADO') return 'ACCEPTED';
  if ((FAILURE_STATUSES as readonly string[]).includes(status)) return 'REJECTED';
  return 'PENDING';
}
