import { Module } from '@nestjs/common';
import { APP_CONFIG, type AppConfig } from '#config/app-config.js';
import { MobileController } from './mobile.controller.js';
import { CamaraSimSwapClient } from './sim-swap/camara-sim-swap.client.js';
import { SIM_SWAP_PROVIDER } from './sim-swap/sim-swap.port.js';
import { SimSwapLimits } from './sim-swap/sim-swap-limits.js';
import { SimSwapService } from './sim-swap/sim-swap.service.js';
import { SimSwapSimulator } from './sim-swap/sim-swap.simulator.js';
import { SmsQueue } from './sms/sms-queue.js';
import { SmsRouting } from './sms/sms-routing.js';
import { SmsService } from './sms/sms.service.js';

/**
 * SMS and SIM swap, API side: the routes, acceptance of messages (route
 * check, rate limits, queue job) and the SIM swap check. Submission to the
 * SMS provider and receipts are in MobileWorkerModule.
 */
@Module({
  controllers: [MobileController],
  providers: [
    SmsService,
    SmsQueue,
    SmsRouting,
    SimSwapService,
    SimSwapLimits,
    SimSwapSimulator,
    CamaraSimSwapClient,
    {
      provide: SIM_SWAP_PROVIDER,
      inject: [APP_CONFIG, SimSwapSimulator, CamaraSimSwapClient],
      useFactory: (config: AppConfig, simulator: SimSwapSimulator, camara: CamaraSimSwapClient) =>
        config.mobile.simSwapProvider === 'camara' ? camara : simulator,
    },
  ],
  exports: [SmsService],
})
export class MobileModule {}
