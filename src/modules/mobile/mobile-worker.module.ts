import { Module } from '@nestjs/common';
import { APP_CONFIG, type AppConfig } from '#config/app-config.js';
import { SmppSmsProvider } from './sms/smpp.provider.js';
import { SmsDispatchService } from './sms/sms-dispatch.service.js';
import { SMS_PROVIDER } from './sms/sms-provider.port.js';
import { SmsQueue } from './sms/sms-queue.js';
import { SmsReceiptsService } from './sms/sms-receipts.service.js';
import { SmsSimulatorProvider } from './sms/sms-simulator.provider.js';
import { SmsSweeper } from './sms/sms-sweeper.js';
import { SmsProcessor } from './sms/sms.processor.js';

/**
 * SMS, worker side only: the `sms` queue's processor, the provider chosen by
 * SMS_PROVIDER (the SMPP link lives here), receipts and the sweeper.
 */
@Module({
  providers: [
    SmsQueue,
    SmsReceiptsService,
    SmsSimulatorProvider,
    SmppSmsProvider,
    {
      provide: SMS_PROVIDER,
      inject: [APP_CONFIG, SmsSimulatorProvider, SmppSmsProvider],
      useFactory: (config: AppConfig, simulator: SmsSimulatorProvider, smpp: SmppSmsProvider) =>
        config.mobile.smsProvider === 'smpp' ? smpp : simulator,
    },
    SmsDispatchService,
    SmsProcessor,
    SmsSweeper,
  ],
})
export class MobileWorkerModule {}
