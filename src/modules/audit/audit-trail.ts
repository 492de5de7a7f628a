import { userInfo } from 'node:os';
import type { EntityManager } from 'typeorm';
import type { Principal } from '#common/auth/principal.js';
import { UUID_PATTERN } from '#common/ids/uuid.js';

/**
 * The audit trail's writing side (docs/decisions/0032-audit-trail.md): who acted, and `auditAppend`, which
 * writes the record with the caller's EntityManager, inside the caller's transaction, so a rolled-back change
 * leaves no record. Ids and route templates only: never a name, tax id, phone number, address or document.
 */

/** Who did it, in which request or command. */
export interface AuditActor {
  /** The application concerned; null for an operator's change that concerns none (a signing key). */
  readonly appId: string | null;
  /** `client:<appId>`, `subject:<uuid>`, `cli:<os user>` or `system:<component>`. */
  readonly actor: string;
  /** The route template (`PATCH /v1/users/{uuid}`) or the command (`apps create`). */
  readonly action: string;
  /** X-Request-Id of the HTTP request; null for the CLI and the workers. */
  readonly requestId: string | null;
}

/** What was touched. */
export type AuditResourceType =
  | 'user'
  | 'company'
  | 'kyc_data'
  | 'kyc_history'
  | 'document'
  | 'kyc_session'
  | 'account'
  | 'transfer'
  | 'sms'
  | 'application'
  | 'application_key'
  | 'signing_key'
  | 'webhook_event';

export interface AuditEntry {
  readonly resourceType: AuditResourceType;
  readonly resourceId: string;
  /** One of the outcomes AuditRecordDto.outcome lists (a new one is added there). */
  readonly outcome: string;
}

/**
 * A resource id as the trail keeps and compares it: a uuid in lower case, as PostgreSQL prints one (decision 0053:
 * uuids are accepted in any case); anything else (a key id, a case-sensitive thumbprint) as given.
 */
export function auditResourceId(id: string): string {
  return UUID_PATTERN.test(id) ? id.toLowerCase() : id;
}

/** The actor of an HTTP request (the principal as CurrentPrincipal gives it, with its request). */
export function requestActor(principal: Principal): AuditActor {
  return {
    appId: principal.appId,
    actor: principal.kind === 'client' ? `client:${principal.appId}` : `subject:${principal.subject}`,
    action: principal.request?.action ?? 'internal',
    requestId: principal.request?.id ?? null,
  };
}

/**
 * The actor of an admin command: the OS user who ran it, kept for the operator (`audit list`); `GET /v1/audit`
 * shows an application `operator` instead (AuditService.forApplication, decision 0082).
 */
export function cliActor(command: string, appId: string | null = null): AuditActor {
  return { appId, actor: `cli:${userInfo().username}`, action: command, requestId: null };
}

/** The actor of a worker's change (the clearing rail's outcome, a KYC step): `system:<component>`. */
export function systemActor(component: string, action: string, appId: string | null): AuditActor {
  return { appId, actor: `system:${component}`, action, requestId: null };
}

/** Appends one record per entry, in the transaction of `manager`. */
export async function auditAppend(
  manager: EntityManager,
  actor: AuditActor,
  ...entries: AuditEntry[]
): Promise<void> {
  for (const entry of entries) {
    await manager.query('SELECT audit_append($1, $2, $3, $4, $5, $6, $7)', [
      actor.appId,
      actor.actor,
      actor.action,
      entry.resourceType,
      auditResourceId(entry.resourceId),
      entry.outcome,
      actor.requestId,
    ]);
  }
}
