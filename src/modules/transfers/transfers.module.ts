import { Module } from '@nestjs/common';
import { WalletModule } from '#modules/wallet/wallet.module.js';
import { WebhooksModule } from '#modules/webhooks/webhooks.module.js';
import { CLEARING_RAIL } from './clearing/clearing-rail.port.js';
import { SimulatorRail } from './clearing/simulator-rail.js';
import { ClearingService } from './clearing/clearing.service.js';
import { CounterpartyController } from './counterparty/counterparty.controller.js';
import { CounterpartyService } from './counterparty/counterparty.service.js';
import { DirectoryModule } from './counterparty/directory.module.js';
import { ReversalsController } from './reversals.controller.js';
import { ReversalsService } from './reversals.service.js';
import { TransferBatcher } from './transfer-batcher.js';
import { TransferViews } from './transfer-views.js';
import { TransferWriter } from './transfer-writer.js';
import { TransfersController } from './transfers.controller.js';
import { TransfersService } from './transfers.service.js';
import { UnclaimedReturnsService } from './unclaimed-returns.service.js';

/**
 * Transfers, the clearing rail and the counterparty lookup (transfers → wallet → users, companies → kyc); the
 * directory of other institutions' accounts (DirectoryModule) also answers the wallet's ALIAS_REGISTRY.
 */
@Module({
  imports: [DirectoryModule, WalletModule, WebhooksModule],
  controllers: [CounterpartyController, TransfersController, ReversalsController],
  providers: [
    CounterpartyService,
    TransfersService,
    ReversalsService,
    UnclaimedReturnsService,
    TransferBatcher,
    TransferViews,
    TransferWriter,
    ClearingService,
    SimulatorRail,
    { provide: CLEARING_RAIL, useExisting: SimulatorRail },
  ],
  exports: [
    CounterpartyService,
    TransfersService,
    ReversalsService,
    UnclaimedReturnsService,
    ClearingService,
  ],
})
export class TransfersModule {}
