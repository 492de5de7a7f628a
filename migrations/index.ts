import { Foundation1763900000000 } from './1763900000000-Foundation.js';
import { WebhookOutbox1763900100000 } from './1763900100000-WebhookOutbox.js';
import { Identity1763900200000 } from './1763900200000-Identity.js';
import { KycDocumentsAndSessions1763900400000 } from './1763900400000-KycDocumentsAndSessions.js';
import { WalletLedger1763900500000 } from './1763900500000-WalletLedger.js';
import { Transfers1763900600000 } from './1763900600000-Transfers.js';
import { Messaging1763900300000 } from './1763900300000-Messaging.js';
import { TransferFunction1763900700000 } from './1763900700000-TransferFunction.js';
import { LeanerTransferFunction1763900800000 } from './1763900800000-LeanerTransferFunction.js';
import { GroupWrites1763900900000 } from './1763900900000-GroupWrites.js';
import { TransferPlans1763901000000 } from './1763901000000-TransferPlans.js';
import { PostingsByTime1763901100000 } from './1763901100000-PostingsByTime.js';
import { EventsFeed1763901200000 } from './1763901200000-EventsFeed.js';
import { Reversals1763901300000 } from './1763901300000-Reversals.js';
import { PostingsAtInsert1763901350000 } from './1763901350000-PostingsAtInsert.js';
import { AuditTrail1763901400000 } from './1763901400000-AuditTrail.js';
import { SharedRateLimit1763901500000 } from './1763901500000-SharedRateLimit.js';
import { WriteEachFactOnce1763901600000 } from './1763901600000-WriteEachFactOnce.js';
import { WebhookBatches1763901700000 } from './1763901700000-WebhookBatches.js';
import { WalletBalanceNotNegative1763901800000 } from './1763901800000-WalletBalanceNotNegative.js';
import { TimeOrderedIds1763901900000 } from './1763901900000-TimeOrderedIds.js';
import { WebhookClaimLockOrder1763902000000 } from './1763902000000-WebhookClaimLockOrder.js';
import { WebhookEventsRoomToClaim1763902100000 } from './1763902100000-WebhookEventsRoomToClaim.js';
import { MoneyPathReferencesKept1763902200000 } from './1763902200000-MoneyPathReferencesKept.js';
import { GroupReadsOnce1763902300000 } from './1763902300000-GroupReadsOnce.js';
import { EntriesBalancePerStatement1763902400000 } from './1763902400000-EntriesBalancePerStatement.js';
import { TimeOrderedIdsOffTheHotPath1763902500000 } from './1763902500000-TimeOrderedIdsOffTheHotPath.js';
import { WebhookClaimWithoutFlushWait1763902600000 } from './1763902600000-WebhookClaimWithoutFlushWait.js';
import { ReversalsByUserToken1763902700000 } from './1763902700000-ReversalsByUserToken.js';
import { ReversalLocksBeforeStates1763902800000 } from './1763902800000-ReversalLocksBeforeStates.js';
import { SmsPerUser1763902900000 } from './1763902900000-SmsPerUser.js';
import { RailReturnReference1763903000000 } from './1763903000000-RailReturnReference.js';
import { DocumentStorageKeys1763903100000 } from './1763903100000-DocumentStorageKeys.js';
import { ReturnsToClosedAccounts1763903200000 } from './1763903200000-ReturnsToClosedAccounts.js';
import { EventsAndAuditReads1763903300000 } from './1763903300000-EventsAndAuditReads.js';
import { WebhookAttemptUrls1763903400000 } from './1763903400000-WebhookAttemptUrls.js';
import { LostCallAnswers1763903500000 } from './1763903500000-LostCallAnswers.js';
import { ReversalOwnerUnderLedgerLock1763903600000 } from './1763903600000-ReversalOwnerUnderLedgerLock.js';
import { ReversalEventsAfterTheOriginal1763903700000 } from './1763903700000-ReversalEventsAfterTheOriginal.js';
import { TransferListFilters1763904000000 } from './1763904000000-TransferListFilters.js';
import { WebhookClaimForDelivery1763904100000 } from './1763904100000-WebhookClaimForDelivery.js';
import { PostingsInCheckOrder1763904500000 } from './1763904500000-PostingsInCheckOrder.js';
import { LastAttemptRecorded1763905400000 } from './1763905400000-LastAttemptRecorded.js';
import { PeriodOfCreatedAt1763905500000 } from './1763905500000-PeriodOfCreatedAt.js';
import { DropOldWebhookClaim1763905700000 } from './1763905700000-DropOldWebhookClaim.js';

/**
 * Every migration, oldest first. Append new ones; never change what one that has landed leaves in the schema (a
 * database that ran it must match one that runs it now; only how it gets there may change: decision 0070).
 */
export const MIGRATIONS = [
  Foundation1763900000000,
  WebhookOutbox1763900100000,
  Identity1763900200000,
  Messaging1763900300000,
  KycDocumentsAndSessions1763900400000,
  WalletLedger1763900500000,
  Transfers1763900600000,
  TransferFunction1763900700000,
  LeanerTransferFunction1763900800000,
  GroupWrites1763900900000,
  TransferPlans1763901000000,
  PostingsByTime1763901100000,
  EventsFeed1763901200000,
  Reversals1763901300000,
  PostingsAtInsert1763901350000,
  AuditTrail1763901400000,
  SharedRateLimit1763901500000,
  WriteEachFactOnce1763901600000,
  WebhookBatches1763901700000,
  WalletBalanceNotNegative1763901800000,
  TimeOrderedIds1763901900000,
  WebhookClaimLockOrder1763902000000,
  WebhookEventsRoomToClaim1763902100000,
  MoneyPathReferencesKept1763902200000,
  GroupReadsOnce1763902300000,
  EntriesBalancePerStatement1763902400000,
  TimeOrderedIdsOffTheHotPath1763902500000,
  WebhookClaimWithoutFlushWait1763902600000,
  ReversalsByUserToken1763902700000,
  ReversalLocksBeforeStates1763902800000,
  SmsPerUser1763902900000,
  RailReturnReference1763903000000,
  DocumentStorageKeys1763903100000,
  ReturnsToClosedAccounts1763903200000,
  EventsAndAuditReads1763903300000,
  WebhookAttemptUrls1763903400000,
  LostCallAnswers1763903500000,
  ReversalOwnerUnderLedgerLock1763903600000,
  ReversalEventsAfterTheOriginal1763903700000,
  TransferListFilters1763904000000,
  WebhookClaimForDelivery1763904100000,
  PostingsInCheckOrder1763904500000,
  LastAttemptRecorded1763905400000,
  PeriodOfCreatedAt1763905500000,
  DropOldWebhookClaim1763905700000,
];
