import { randomUUID } from 'node:crypto';
import { Inject, Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, type EntityManager } from 'typeorm';
import type { Principal } from '../../../common/auth/principal.js';
import {
  ForbiddenError,
  NotFoundError,
  ValidationFailedError,
} from '../../../common/errors/domain-errors.js';
import { WEBHOOK_EVENTS } from '../../webhooks/webhook-events.js';
import { WebhooksService } from '../../webhooks/webhooks.service.js';
import { CompaniesService } from '../companies/companies.service.js';
import { DocumentEntity } from '../documents/entities/document.entity.js';
import { UsersService } from '../users/users.service.js';
import type { KycSessionDto } from './dto/kyc-session.dto.js';
import {
  KYC_STEPS,
  KycSessionEntity,
  KycSessionStepEntity,
  type KycSessionStatus,
  type KycStep,
  type KycStepStatus,
} from './entities/kyc-session.entity.js';
import { KYC_PROVIDER, type KycProvider } from './kyc-provider.port.js';

/** Steps that verify an uploaded document; GOVERNMENTAL_CHECK_SELFIE checks the SELFIE against the registry. */
const DOCUMENT_STEPS: readonly KycStep[] = ['DOCUMENT_FRONT', 'DOCUMENT_BACK', 'SELFIE'];

/**
 * KYC sessions: created for a user or company with every step PENDING; the
 * client submits each step (with a document); the KYC provider completes it
 * asynchronously as SUCCESS or FAILED, which emits a `kyc_steep_update`
 * webhook in the same transaction. The session is APPROVED when every step
 * succeeded and REJECTED as soon as one failed.
 */
@Injectable()
export class KycSessionsService {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly users: UsersService,
    private readonly companies: CompaniesService,
    private readonly webhooks: WebhooksService,
    @Inject(KYC_PROVIDER) private readonly provider: KycProvider,
  ) {}

  async start(principal: Principal, ownerType: 'USER' | 'COMPANY', ownerId: string): Promise<KycSessionDto> {
    const id = randomUUID();
    await this.dataSource.transaction(async (manager) => {
      try {
        if (ownerType === 'USER') await this.users.find(manager, principal, ownerId);
        else await this.companies.find(manager, principal, ownerId);
      } catch (error) {
        if (error instanceof NotFoundError) {
          throw ValidationFailedError.single('ownerId', 'notfound', `no such ${ownerType.toLowerCase()}`);
        }
        throw error;
      }
      await manager.insert(KycSessionEntity, {
        id,
        appId: principal.appId,
        ownerType,
        ownerId,
        status: 'PENDING',
      });
      await manager.insert(
        KycSessionStepEntity,
        KYC_STEPS.map((step, position) => ({ sessionId: id, step, position, status: 'PENDING' as const })),
      );
    });
    return this.get(principal, id);
  }

  async get(principal: Principal, id: string): Promise<KycSessionDto> {
    const session = await this.find(this.dataSource.manager, principal, id);
    return this.view(session, await this.steps(this.dataSource.manager, id));
  }

  async submit(
    principal: Principal,
    id: string,
    stepName: string,
    documentUuid?: string,
  ): Promise<KycSessionDto> {
    if (!(KYC_STEPS as readonly string[]).includes(stepName)) {
      throw ValidationFailedError.single('step', 'invalid', `step must be one of ${KYC_STEPS.join(', ')}`);
    }
    const stepKind = stepName as KycStep;
    const submittedAt = await this.dataSource.transaction(async (manager) => {
      const session = await this.find(manager, principal, id, true);
      if (session.status === 'APPROVED' || session.status === 'REJECTED') {
        throw new ForbiddenError('INVALID_STATE', `the session is ${session.status}`);
      }
      const steps = await this.steps(manager, id);
      const step = steps.find((candidate) => candidate.step === stepKind)!;
      if (step.submittedAt !== null)
        throw new ForbiddenError('INVALID_STATE', `${stepKind} was already submitted`);
      let documentId: string | null = null;
      if (DOCUMENT_STEPS.includes(stepKind)) {
        if (!documentUuid)
          throw ValidationFailedError.single('documentUuid', 'required', `${stepKind} needs a document`);
        const document = await manager.findOneBy(DocumentEntity, {
          id: documentUuid,
          appId: session.appId,
          ownerId: session.ownerId,
        });
        if (!document) {
          throw ValidationFailedError.single(
            'documentUuid',
            'notfound',
            'no such document of the session owner',
          );
        }
        documentId = document.id;
      } else {
        if (documentUuid) {
          throw ValidationFailedError.single(
            'documentUuid',
            'invalid',
            `${stepKind} uses the SELFIE document`,
          );
        }
        const selfie = steps.find((candidate) => candidate.step === 'SELFIE')!;
        if (selfie.submittedAt === null)
          throw new ForbiddenError('INVALID_STATE', 'submit the SELFIE step first');
      }
      const now = new Date();
      await manager.update(
        KycSessionStepEntity,
        { sessionId: id, step: stepKind },
        { submittedAt: now, documentId },
      );
      if (session.status === 'PENDING')
        await manager.update(KycSessionEntity, { id }, { status: 'IN_PROGRESS' });
      return now;
    });
    // After commit. If this enqueue is lost, the worker's recovery sweep submits the step again.
    await this.provider.submit({ sessionId: id, step: stepKind, submittedAt });
    return this.get(principal, id);
  }

  /**
   * The provider's verdict. Idempotent: only a submitted, still PENDING step changes. Emits
   * kyc_steep_update {session, steep, backStatus, newStatus} through the outbox in the same transaction.
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
      const statuses = (await this.steps(manager, sessionId)).map((row) =>
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
        { status, completedAt: status === 'APPROVED' || status === 'REJECTED' ? new Date() : null },
      );
      await this.webhooks.emit(manager, {
        appId: session.appId,
        event: WEBHOOK_EVENTS.kycStepUpdate,
        subject: sessionId,
        data: { session: sessionId, steep: step, backStatus: 'PENDING', newStatus: verdict },
      });
      return true;
    });
  }

  /** Submitted steps still waiting for a verdict since before `olderThan` (for the recovery sweep). */
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

  private async find(
    manager: EntityManager,
    principal: Principal,
    id: string,
    lock = false,
  ): Promise<KycSessionEntity> {
    const session = await manager.findOne(KycSessionEntity, {
      where: { id, appId: principal.appId },
      ...(lock ? { lock: { mode: 'pessimistic_write' as const } } : {}),
    });
    if (!session || (principal.kind === 'subject' && session.ownerId !== principal.subject)) {
      throw new NotFoundError(id, 'KYC session not found');
    }
    return session;
  }

  private steps(manager: EntityManager, sessionId: string): Promise<KycSessionStepEntity[]> {
    return manager.find(KycSessionStepEntity, { where: { sessionId }, order: { position: 'ASC' } });
  }

  private view(session: KycSessionEntity, steps: KycSessionStepEntity[]): KycSessionDto {
    return {
      uuid: session.id,
      ownerType: session.ownerType,
      ownerId: session.ownerId,
      status: session.status,
      steps: steps.map((step) => ({
        step: step.step,
        status: step.status,
        documentUuid: step.documentId,
        submittedAt: step.submittedAt?.toISOString() ?? null,
        completedAt: step.completedAt?.toISOString() ?? null,
        failureReason: step.failureReason,
      })),
      created: session.createdAt.toISOString(),
      updated: session.updatedAt.toISOString(),
    };
  }
}
