import { Module, type OnModuleInit } from '@nestjs/common';
import { SigningKeysModule } from '#modules/auth/signing-keys.module.js';
import { SigningKeysService } from '#modules/auth/signing-keys.service.js';
import { WebhookDeliveryProcessor } from './webhook-delivery.processor.js';
import { WebhookDeliveryService } from './webhook-delivery.service.js';
import { WebhookRelay } from './webhook-relay.js';
import { PruneEventsProcessor } from './prune-events.processor.js';

/** The consumer side (worker only): relay, sweeper, delivery and the events' retention. */
@Module({
  imports: [SigningKeysModule],
  providers: [WebhookDeliveryService, WebhookRelay, WebhookDeliveryProcessor, PruneEventsProcessor],
})
export class WebhooksWorkerModule implements OnModuleInit {
  constructor(private readonly signingKeys: SigningKeysService) {}

  /**
   * A process that delivers webhooks does not start without a key to sign them with (a missing
   * SIGNING_KEYS_FILE stops it here, as it stops the API): started, every attempt failed unsent and used up
   * the event's attempts, the last one marking it failed.
   */
  async onModuleInit(): Promise<void> {
    await this.signingKeys.current();
  }
}
