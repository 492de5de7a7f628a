import { Module } from '@nestjs/common';
import { APP_CONFIG, type AppConfig } from '../../config/app-config.js';
import { WalletModule } from '../wallet/wallet.module.js';
import { COUNTERPARTY_DIRECTORY } from './counterparty/counterparty-directory.port.js';
import { CounterpartyController } from './counterparty/counterparty.controller.js';
import { CounterpartyService } from './counterparty/counterparty.service.js';
import { FixtureDirectory } from './counterparty/fixture-directory.js';

/** Transfers and the counterparty lookup (transfers → wallet → identity). Now: the counterparty lookup. */
@Module({
  imports: [WalletModule],
  controllers: [CounterpartyController],
  providers: [
    CounterpartyService,
    {
      provide: COUNTERPARTY_DIRECTORY,
      inject: [APP_CONFIG],
      useFactory: (config: AppConfig) => new FixtureDirectory(config.counterpartyDirectoryFile),
    },
  ],
  exports: [CounterpartyService],
})
export class TransfersModule {}
