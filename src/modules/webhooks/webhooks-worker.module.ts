import { Module } from '@nestjs/common';
import { SigningKeysModule } from '#modules/auth/signing-keys.module.js';
import { WebhookDeliveryProcessor } from './webhook-delivery.processor.js';
import { WebhookDeliveryService } from './webhook-delivery.service.js';
import { WebhookRelay } from './webhook-relay.js';
import { PruneEventsProcessor } from './prune-events.processor.js';

/** The consumer side (worker only): relay, sweeper, delivery and the events' retention. */
@Module({
  imports: [SigningKeysModule],
  providers: [WebhookDeliveryService, WebhookRelay, WebhookDeliveryProcessor, PruneEventsProcessor],
})
export class WebhooksWorkerModule {}
