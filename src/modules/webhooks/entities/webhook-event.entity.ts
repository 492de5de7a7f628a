import {
  Check,
  Column,
  CreateDateColumn,
  Entity,
  Generated,
  Index,
  JoinColumn,
  ManyToOne,
  PrimaryColumn,
  Unique,
  type Relation,
} from 'typeorm';
import { ApplicationEntity } from '#modules/apps/entities/application.entity.js';

export type WebhookEventStatus = 'pending' | 'delivered' | 'failed';

export interface WebhookPayload {
  event: string;
  /** Seconds since the epoch, when the event happened. */
  timestamp: number;
  data: Record<string, unknown>;
}

/** An event in the outbox: the record of what must reach the application's webhook URL. */
@Entity({ name: 'webhook_events' })
@Unique('UQ_webhook_events_seq', ['seq'])
@Check('CHK_webhook_events_status', `"status" IN ('pending', 'delivered', 'failed')`)
@Index('idx_webhook_events_pending', ['nextAttemptAt'], { where: `"status" = 'pending'` })
@Index('idx_webhook_events_subject', ['appId', 'subject', 'seq'], { where: `"status" = 'pending'` })
@Index('idx_webhook_events_app_event_created', ['appId', 'event', 'createdAt', 'id'])
@Index('idx_webhook_events_created', ['createdAt'], { where: `"status" <> 'pending'` })
export class WebhookEventEntity {
  @PrimaryColumn('uuid', { primaryKeyConstraintName: 'PK_webhook_events' })
  id: string;

  /** Global order of events; events of one subject are delivered in this order. */
  @Column('bigint')
  @Generated('increment')
  seq: string;

  @Column('uuid', { name: 'app_id' })
  appId: string;

  @Column('text')
  event: string;

  /** Ordering key (a transfer's or KYC session's uuid); null when the event needs no ordering. */
  @Column('text', { nullable: true })
  subject: string | null;

  @Column('jsonb')
  payload: WebhookPayload;

  @Column('text', { default: 'pending' })
  status: WebhookEventStatus;

  @Column('integer', { default: 0 })
  attempts: number;

  /** Bumped whenever delivery is (re)scheduled; part of the queue job id. */
  @Column('integer', { default: 0 })
  generation: number;

  @Column('integer', { default: 0 })
  replays: number;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;

  /** When the next attempt is due; null while it waits for an earlier event of its subject. */
  @Column('timestamptz', { name: 'next_attempt_at', nullable: true })
  nextAttemptAt: Date | null;

  /** A worker delivering it holds it until then. */
  @Column('timestamptz', { name: 'lease_until', nullable: true })
  leaseUntil: Date | null;

  @Column('timestamptz', { name: 'last_attempt_at', nullable: true })
  lastAttemptAt: Date | null;

  @Column('timestamptz', { name: 'delivered_at', nullable: true })
  deliveredAt: Date | null;

  @Column('text', { name: 'last_error', nullable: true })
  lastError: string | null;

  @ManyToOne(() => ApplicationEntity, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'app_id', foreignKeyConstraintName: 'FK_webhook_events_app' })
  application?: Relation<ApplicationEntity>;
}
