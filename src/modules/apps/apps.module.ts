import { Module } from '@nestjs/common';
import { AppsService } from './apps.service.js';

/** The application registry (tenants, their keys and webhook URLs). */
@Module({
  providers: [AppsService],
  exports: [AppsService],
})
export class AppsModule {}
