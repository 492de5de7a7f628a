import { Module } from '@nestjs/common';
import { WebhookMetrics } from './webhook-metrics.js';
import { WebhooksService } from './webhooks.service.js';

/** The outbox's producer side: what feature modules import to emit events in their transactions. */
@Module({
  providers: [WebhooksService, WebhookMetrics],
  exports: [WebhooksService],
})
export class WebhooksModule {}
