import { Module } from '@nestjs/common';
import { SigningKeysModule } from '#modules/auth/signing-keys.module.js';
import { WebhookDeliveryProcessor } from './webhook-delivery.processor.js';
import { WebhookDeliveryService } from './webhook-delivery.service.js';
import { WebhookRelay } from './webhook-relay.js';

/** The consumer side (worker only): relay, sweeper and delivery. */
@Module({
  imports: [SigningKeysModule],
  providers: [WebhookDeliveryService, WebhookRelay, WebhookDeliveryProcessor],
})
export class WebhooksWorkerModule {}
