import { Check, Column, CreateDateColumn, Entity, PrimaryColumn, UpdateDateColumn } from 'typeorm';

export type ApplicationStatus = 'active' | 'disabled';

/** A client application: the tenant every stored resource belongs to. appId == clientId. */
@Entity({ name: 'applications' })
@Check('CHK_applications_status', `"status" IN ('active', 'disabled')`)
export class ApplicationEntity {
  @PrimaryColumn('uuid', { primaryKeyConstraintName: 'PK_applications' })
  id: string;

  @Column('text')
  name: string;

  @Column('text', { default: 'active' })
  status: ApplicationStatus;

  @Column('text', { name: 'webhook_url', nullable: true })
  webhookUrl: string | null;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;

  @UpdateDateColumn({ name: 'updated_at', type: 'timestamptz' })
  updatedAt: Date;
}
