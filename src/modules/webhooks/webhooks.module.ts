import { Module } from '@nestjs/common';
import { WebhookMetrics } from './webhook-metrics.js';
import { WebhooksService } from './webhooks.service.js';
import { EventsFeedController } from './events-feed.controller.js';
import { EventsFeedService } from './events-feed.service.js';

/** The outbox's producer side (what feature modules import to emit events in their transactions) and the events feed. */
@Module({
  controllers: [EventsFeedController],
  providers: [WebhooksService, WebhookMetrics, EventsFeedService],
  exports: [WebhooksService],
})
export class WebhooksModule {}
