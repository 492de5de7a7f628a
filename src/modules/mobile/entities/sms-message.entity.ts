import {
  Check,
  Column,
  CreateDateColumn,
  Entity,
  Index,
  JoinColumn,
  ManyToOne,
  PrimaryColumn,
  type Relation,
} from 'typeorm';
import { ApplicationEntity } from '#modules/apps/entities/application.entity.js';

/**
 * One SMS this service accepted. `status` is an open set: QUEUED and ENROUTE
 * are ours, every later value is the `stat` of the provider's delivery receipt
 * stored as it came (DELIVRD, UNDELIV, EXPIRED, REJECTD, …).
 * `dnis` and `body` are personal data: never logged; `body` is cleared once the
 * provider has the message.
 */
@Entity({ name: 'sms_messages' })
@Check('CHK_sms_messages_dnis', `"dnis" ~ '^[0-9]{12}$'`)
@Check('CHK_sms_messages_status', `"status" ~ '^[A-Z_]{1,20}$'`)
@Index('idx_sms_messages_app_created', ['appId', 'createdAt'])
@Index('idx_sms_messages_app_dnis_created', ['appId', 'dnis', 'createdAt'])
@Index('idx_sms_messages_queued', ['createdAt'], { where: `"status" = 'QUEUED'` })
@Index('idx_sms_messages_app_sender_created', ['appId', 'senderSubject', 'createdAt'], {
  where: `"sender_subject" IS NOT NULL`,
})
@Index('UQ_sms_messages_provider_message', ['provider', 'providerMessageId'], {
  unique: true,
  where: `"provider_message_id" IS NOT NULL`,
})
export class SmsMessageEntity {
  /** The message_id this service answers with. */
  @PrimaryColumn('uuid', { primaryKeyConstraintName: 'PK_sms_messages' })
  id: string;

  @Column('uuid', { name: 'app_id' })
  appId: string;

  /** The user or company whose token sent it; null when the application itself (access token) sent it. */
  @Column('uuid', { name: 'sender_subject', nullable: true })
  senderSubject: string | null;

  @Column('text')
  dnis: string;

  @Column('text', { nullable: true })
  body: string | null;

  @Column('text', { default: 'QUEUED' })
  status: string;

  /**
   * `simulator` or `smpp`: the provider that took the message, set with each attempt to hand it over (a receipt waits
   * only for its own provider's unrecorded submissions, docs/decisions/0085).
   */
  @Column('text', { nullable: true })
  provider: string | null;

  @Column('text', { name: 'provider_message_id', nullable: true })
  providerMessageId: string | null;

  @Column('text', { name: 'error_code', nullable: true })
  errorCode: string | null;

  @Column('text', { nullable: true })
  mccmnc: string | null;

  /** The `done date` of the DELIVRD receipt: when the network delivered; null until then (decision 0085). */
  @Column('timestamptz', { name: 'delivery_time', nullable: true })
  deliveryTime: Date | null;

  /** When this service recorded the receipt. */
  @Column('timestamptz', { name: 'system_delivery_time', nullable: true })
  systemDeliveryTime: Date | null;

  @Column('integer', { default: 0 })
  attempts: number;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;

  @Column('timestamptz', { name: 'submitted_at', nullable: true })
  submittedAt: Date | null;

  @ManyToOne(() => ApplicationEntity, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'app_id', foreignKeyConstraintName: 'FK_sms_messages_app' })
  application?: Relation<ApplicationEntity>;
}
