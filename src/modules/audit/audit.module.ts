import { Module } from '@nestjs/common';
import { AuditController } from './audit.controller.js';
import { AuditService } from './audit.service.js';

/**
 * The audit trail's reading side (GET /v1/audit, CLI `audit list`). Feature modules
 * write records with `auditAppend` (audit-trail.ts) in their own transactions; this module imports no feature
 * module (docs/decisions/0032-audit-trail.md).
 */
@Module({
  controllers: [AuditController],
  providers: [AuditService],
  exports: [AuditService],
})
export class AuditModule {}
