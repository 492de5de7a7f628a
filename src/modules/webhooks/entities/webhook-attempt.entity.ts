import {
  Check,
  Column,
  Entity,
  Index,
  JoinColumn,
  ManyToOne,
  PrimaryGeneratedColumn,
  type Relation,
} from 'typeorm';
import { WebhookEventEntity } from './webhook-event.entity.js';

/** One delivery attempt: when, where, how long, what came back. */
@Entity({ name: 'webhook_attempts' })
@Check('CHK_webhook_attempts_outcome', `"outcome" IN ('delivered', 'failed')`)
/** One row per attempt: a record statement repeated after a lost commit adds none (ON CONFLICT on this index). */
@Index('UQ_webhook_attempts_event_attempt_start', ['eventId', 'attempt', 'startedAt'], { unique: true })
export class WebhookAttemptEntity {
  @PrimaryGeneratedColumn('increment', { type: 'bigint', primaryKeyConstraintName: 'PK_webhook_attempts' })
  id: string;

  @Column('uuid', { name: 'event_id' })
  eventId: string;

  @Column('integer')
  attempt: number;

  @Column('text', { nullable: true })
  url: string | null;

  @Column('timestamptz', { name: 'started_at' })
  startedAt: Date;

  @Column('integer', { name: 'duration_ms' })
  durationMs: number;

  @Column('integer', { name: 'status_code', nullable: true })
  statusCode: number | null;

  @Column('text')
  outcome: 'delivered' | 'failed';

  @Column('text', { nullable: true })
  error: string | null;

  @ManyToOne(() => WebhookEventEntity, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'event_id', foreignKeyConstraintName: 'FK_webhook_attempts_event' })
  event?: Relation<WebhookEventEntity>;
}
