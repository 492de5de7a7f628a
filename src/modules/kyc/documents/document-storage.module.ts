import path from 'node:path';
import { Module } from '@nestjs/common';
import { APP_CONFIG, type AppConfig } from '#config/app-config.js';
import { DocumentReaper } from './document-reaper.js';
import { DOCUMENT_STORAGE } from './document-storage.port.js';
import { LocalDiskStorage } from './local-disk.storage.js';

/**
 * The document storage (local disk under DATA_DIR/documents, or an S3-compatible bucket) and the reaper of bytes
 * no row names: for the API's documents, the worker's periodic reaping and the CLI's `documents reap`.
 */
@Module({
  providers: [
    {
      provide: DOCUMENT_STORAGE,
      inject: [APP_CONFIG],
      // The AWS SDK (~24 MiB resident once loaded) is imported only when documents go to a bucket.
      useFactory: async (config: AppConfig) =>
        config.documentStorage.kind === 's3'
          ? new (await import('./s3.storage.js')).S3Storage(config.documentStorage)
          : new LocalDiskStorage(path.join(config.dataDir, 'documents')),
    },
    DocumentReaper,
  ],
  exports: [DOCUMENT_STORAGE, DocumentReaper],
})
export class DocumentStorageModule {}
