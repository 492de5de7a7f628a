import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { PinoLogger } from '#common/logging/pino-logger.js';
import { WEBHOOK_EVENTS } from '#modules/webhooks/webhook-events.js';
import { WebhooksService } from '#modules/webhooks/webhooks.service.js';
import { DocumentEntity } from '../documents/entities/document.entity.js';
import {
  KycSessionEntity,
  KycSessionStepEntity,
  stepsOf,
  type KycSessionStatus,
  type KycStep,
  type KycStepStatus,
} from './entities/kyc-session.entity.js';
import { auditAppend, systemActor } from '#modules/audit/audit-trail.js';
import type { OwnerType } from '../owners/kyc-owners.port.js';

/**
 * The table of each kind of owner. The worker does not load users or companies (KycWorkerModule), so the
 * verdict reads the owner's row itself.
 */
const OWNER_TABLES: Readonly<Record<OwnerType, string>> = { USER: 'users', COMPANY: 'companies' };

/**
 * KYC sessions, the provider's side: each verdict (SUCCESS or FAILED) updates
 * its step and moves the session (APPROVED when every step succeeded, REJECTED
 * as soon as one failed), and emits a `kyc_steep_update` webhook in the same
 * transaction. Used by the worker. A deleted owner's sessions are gone with it
 * (decision 0009): their verdicts are dropped.
 */
@Injectable()
export class KycVerificationService {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly webhooks: WebhooksService,
    private readonly logger: PinoLogger,
  ) {
    this.logger.setContext('KycVerificationService');
  }

  /**
   * The provider's verdict. Idempotent: only a submitted, still PENDING step changes. Emits
   * kyc_steep_update {session, steep, backStatus, newStatus} through the outbox in the same transaction.
   * Dropped (false, nothing written) once the session's owner is deleted: the owner is read after the session's
   * lock, in the order a submission takes them, and shared-locked, so a deletion waits for the verdict or the
   * verdict for the deletion (decision 0068).
   */
  async complete(
    sessionId: string,
    step: KycStep,
    verdict: 'SUCCESS' | 'FAILED',
    reason?: string,
  ): Promise<boolean> {
    return this.dataSource.transaction(async (manager) => {
      const session = await manager.findOne(KycSessionEntity, {
        where: { id: sessionId },
        lock: { mode: 'pessimistic_write' },
      });
      if (!session) return false;
      const owner = (await manager.query(
        `SELECT 1 FROM ${OWNER_TABLES[session.ownerType]} WHERE id = $1 AND deleted_at IS NULL FOR SHARE`,
        [session.ownerId],
      )) as unknown[];
      if (owner.length === 0) {
        this.logger.info({ sessionId, step }, "KYC verdict dropped: the session's owner was deleted");
        return false;
      }
      const current = await manager.findOneBy(KycSessionStepEntity, { sessionId, step });
      if (!current || current.status !== 'PENDING' || current.submittedAt === null) return false;
      await manager.update(
        KycSessionStepEntity,
        { sessionId, step },
        {
          status: verdict,
          completedAt: new Date(),
          failureReason: verdict === 'FAILED' ? (reason ?? null) : null,
        },
      );
      const statuses = (await stepsOf(manager, sessionId)).map((row) =>
        row.step === step ? verdict : row.status,
      ) as KycStepStatus[];
      const status: KycSessionStatus = statuses.includes('FAILED')
        ? 'REJECTED'
        : statuses.every((value) => value === 'SUCCESS')
          ? 'APPROVED'
          : 'IN_PROGRESS';
      await manager.update(
        KycSessionEntity,
        { id: sessionId },
        {
          status,
          // When it first became final: a later verdict of a session already REJECTED keeps that time.
          completedAt:
            status === 'APPROVED' || status === 'REJECTED' ? (session.completedAt ?? new Date()) : null,
        },
      );
      await this.webhooks.emit(manager, {
        appId: session.appId,
        event: WEBHOOK_EVENTS.kycStepUpdate,
        subject: sessionId,
        data: { session: sessionId, steep: step, backStatus: 'PENDING', newStatus: verdict },
      });
      await auditAppend(manager, systemActor('kyc-provider', `kyc verify ${step}`, session.appId), {
        resourceType: 'kyc_session',
        resourceId: sessionId,
        outcome: `${step} ${verdict}`,
      });
      return true;
    });
  }

  /**
   * Submitted steps still waiting for a verdict since before `olderThan` (for the recovery sweep), of sessions
   * whose owner is not deleted: a deleted owner's verdicts are dropped, so its steps are never resubmitted.
   */
  async overdueSteps(
    olderThan: Date,
    limit = 500,
  ): Promise<{ sessionId: string; step: KycStep; submittedAt: Date }[]> {
    const rows = await this.dataSource
      .getRepository(KycSessionStepEntity)
      .createQueryBuilder('s')
      .where(`s.status = 'PENDING' AND s.submitted_at IS NOT NULL AND s.submitted_at < :olderThan`, {
        olderThan,
      })
      .andWhere(
        `EXISTS (SELECT 1 FROM kyc_sessions k
                  WHERE k.id = s.session_id
                    AND (k.owner_type = 'USER' AND EXISTS (
                           SELECT 1 FROM users u WHERE u.id = k.owner_id AND u.deleted_at IS NULL)
                      OR k.owner_type = 'COMPANY' AND EXISTS (
                           SELECT 1 FROM companies c WHERE c.id = k.owner_id AND c.deleted_at IS NULL)))`,
      )
      .orderBy('s.submitted_at', 'ASC')
      .take(limit)
      .getMany();
    return rows.map((row) => ({ sessionId: row.sessionId, step: row.step, submittedAt: row.submittedAt! }));
  }

  /** The step and its document, for the provider. */
  async stepForVerification(
    sessionId: string,
    step: KycStep,
  ): Promise<{ step: KycSessionStepEntity; document: DocumentEntity | null } | undefined> {
    const manager = this.dataSource.manager;
    const row = await manager.findOneBy(KycSessionStepEntity, { sessionId, step });
    if (!row) return undefined;
    const documentStep =
      step === 'GOVERNMENTAL_CHECK_SELFIE'
        ? await manager.findOneBy(KycSessionStepEntity, { sessionId, step: 'SELFIE' })
        : row;
    const document = documentStep?.documentId
      ? await manager.findOneBy(DocumentEntity, { id: documentStep.documentId })
      : null;
    return { step: row, document };
  }
}
