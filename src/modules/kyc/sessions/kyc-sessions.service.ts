import { randomUUID } from 'node:crypto';
import { Inject, Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, type EntityManager } from 'typeorm';
import type { Principal } from '#common/auth/principal.js';
import { PinoLogger } from '#common/logging/pino-logger.js';
import { handOver } from '#common/queue/hand-over.js';
import { ForbiddenError, NotFoundError, ValidationFailedError } from '#common/errors/domain-errors.js';
import { DocumentEntity } from '../documents/entities/document.entity.js';
import type { OwnerType } from '../owners/kyc-owners.port.js';
import { KycOwners } from '../owners/kyc-owners.js';
import type { KycSessionDto } from './dto/kyc-session.dto.js';
import {
  KYC_STEPS,
  KycSessionEntity,
  KycSessionStepEntity,
  stepsOf,
  type KycStep,
} from './entities/kyc-session.entity.js';
import { KYC_PROVIDER, type KycProvider } from './kyc-provider.port.js';
import { auditAppend, requestActor } from '#modules/audit/audit-trail.js';

/** Steps that verify an uploaded document; GOVERNMENTAL_CHECK_SELFIE checks the SELFIE against the registry. */
const DOCUMENT_STEPS: readonly KycStep[] = ['DOCUMENT_FRONT', 'DOCUMENT_BACK', 'SELFIE'];

/**
 * KYC sessions, the client's side: created for a user or company with every
 * step PENDING; the client submits each step (with a document) and the KYC
 * provider decides it asynchronously (KycVerificationService, in the worker).
 */
@Injectable()
export class KycSessionsService {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly owners: KycOwners,
    @Inject(KYC_PROVIDER) private readonly provider: KycProvider,
    private readonly logger: PinoLogger,
  ) {
    this.logger.setContext('KycSessionsService');
  }

  /**
   * A new session with every step PENDING. Its answer is read in the transaction that writes it: a read after the
   * commit that lost its connection answered 503 for a session that was made, and the client's retry made a second
   * one (decision 0088). A failure here rolls the session back, so a 503 still means nothing was written.
   */
  async start(principal: Principal, ownerType: OwnerType, ownerId: string): Promise<KycSessionDto> {
    const id = randomUUID();
    return this.dataSource.transaction(async (manager) => {
      try {
        // Locked: an owner deleted meanwhile does not end up with a new session.
        await this.owners.find(manager, principal, ownerType, ownerId, true);
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
      await auditAppend(manager, requestActor(principal), {
        resourceType: 'kyc_session',
        resourceId: id,
        outcome: 'created',
      });
      return this.viewIn(manager, id);
    });
  }

  async get(principal: Principal, id: string): Promise<KycSessionDto> {
    const session = await this.find(this.dataSource.manager, principal, id);
    return this.view(session, await stepsOf(this.dataSource.manager, id));
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
    // The answer is read in the transaction, as start's is (decision 0088): a lost read after the commit answered
    // 503 for a step that was submitted, and the retry was refused as already submitted.
    const { submittedAt, answer } = await this.dataSource.transaction(async (manager) => {
      const session = await this.find(manager, principal, id, true);
      if (session.status === 'APPROVED' || session.status === 'REJECTED') {
        throw new ForbiddenError('INVALID_STATE', `the session is ${session.status}`);
      }
      const steps = await stepsOf(manager, id);
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
          ownerType: session.ownerType,
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
      await auditAppend(manager, requestActor(principal), {
        resourceType: 'kyc_session',
        resourceId: session.id,
        outcome: `submitted ${stepKind}`,
      });
      return { submittedAt: now, answer: await this.viewIn(manager, id) };
    });
    // After commit: should this hand-over fail or be late, the worker's recovery sweep submits the step again.
    await handOver(
      () => this.provider.submit({ sessionId: id, step: stepKind, submittedAt }),
      this.logger,
      'a KYC step',
      { sessionId: id, step: stepKind },
    );
    return answer;
  }

  /** The session `id` as it stands in `manager`'s transaction, which has just written it. */
  private async viewIn(manager: EntityManager, id: string): Promise<KycSessionDto> {
    return this.view(await manager.findOneByOrFail(KycSessionEntity, { id }), await stepsOf(manager, id));
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
    // A deleted owner's sessions are gone with it (decision 0009), as its documents are; a step submitted
    // (lock) holds the owner until it is recorded.
    await this.owners
      .find(manager, principal, session.ownerType, session.ownerId, lock)
      .catch((error: unknown) => {
        throw error instanceof NotFoundError ? new NotFoundError(id, 'KYC session not found') : error;
      });
    return session;
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
