import {
  Check,
  Column,
  CreateDateColumn,
  Entity,
  Index,
  JoinColumn,
  ManyToOne,
  PrimaryColumn,
  UpdateDateColumn,
  type EntityManager,
  type Relation,
} from 'typeorm';

export const KYC_STEPS = ['DOCUMENT_FRONT', 'DOCUMENT_BACK', 'SELFIE', 'GOVERNMENTAL_CHECK_SELFIE'] as const;
export type KycStep = (typeof KYC_STEPS)[number];
export type KycSessionStatus = 'PENDING' | 'IN_PROGRESS' | 'APPROVED' | 'REJECTED';
export type KycStepStatus = 'PENDING' | 'SUCCESS' | 'FAILED';

/** A KYC session of a user or company: its steps are completed by the KYC provider. */
@Entity({ name: 'kyc_sessions' })
@Check('CHK_kyc_sessions_status', `"status" IN ('PENDING', 'IN_PROGRESS', 'APPROVED', 'REJECTED')`)
@Check('CHK_kyc_sessions_owner_type', `"owner_type" IN ('USER', 'COMPANY')`)
@Index('idx_kyc_sessions_owner', ['appId', 'ownerId'])
export class KycSessionEntity {
  @PrimaryColumn('uuid', { primaryKeyConstraintName: 'PK_kyc_sessions' }) id: string;
  @Column('uuid', { name: 'app_id' }) appId: string;
  @Column('text', { name: 'owner_type' }) ownerType: 'USER' | 'COMPANY';
  @Column('uuid', { name: 'owner_id' }) ownerId: string;
  @Column('text', { default: 'PENDING' }) status: KycSessionStatus;
  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' }) createdAt: Date;
  @UpdateDateColumn({ name: 'updated_at', type: 'timestamptz' }) updatedAt: Date;
  @Column('timestamptz', { name: 'completed_at', nullable: true }) completedAt: Date | null;
}

/** One step of a session. */
@Entity({ name: 'kyc_session_steps' })
@Check('CHK_kyc_session_steps_status', `"status" IN ('PENDING', 'SUCCESS', 'FAILED')`)
@Index('idx_kyc_session_steps_due', ['submittedAt'], {
  where: `"status" = 'PENDING' AND "submitted_at" IS NOT NULL`,
})
export class KycSessionStepEntity {
  @PrimaryColumn('uuid', { name: 'session_id', primaryKeyConstraintName: 'PK_kyc_session_steps' })
  sessionId: string;
  @PrimaryColumn('text', { primaryKeyConstraintName: 'PK_kyc_session_steps' }) step: KycStep;
  @Column('integer') position: number;
  @Column('text', { default: 'PENDING' }) status: KycStepStatus;
  @Column('uuid', { name: 'document_id', nullable: true }) documentId: string | null;
  @Column('timestamptz', { name: 'submitted_at', nullable: true }) submittedAt: Date | null;
  @Column('timestamptz', { name: 'completed_at', nullable: true }) completedAt: Date | null;
  @Column('text', { name: 'failure_reason', nullable: true }) failureReason: string | null;

  @ManyToOne(() => KycSessionEntity, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'session_id', foreignKeyConstraintName: 'FK_kyc_session_steps_session' })
  session?: Relation<KycSessionEntity>;
}

/** The steps of a session, in their order. */
export function stepsOf(manager: EntityManager, sessionId: string): Promise<KycSessionStepEntity[]> {
  return manager.find(KycSessionStepEntity, { where: { sessionId }, order: { position: 'ASC' } });
}
