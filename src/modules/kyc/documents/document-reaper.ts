import { Inject, Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { UUID_PATTERN } from '#common/ids/uuid.js';
import { PinoLogger } from '#common/logging/pino-logger.js';
import { APP_CONFIG, type AppConfig } from '#config/app-config.js';
import { DOCUMENT_STORAGE, type DocumentStorage, type StoredObject } from './document-storage.port.js';

/** Stored objects checked against the rows in one query. */
const BATCH = 500;

export interface ReapOptions {
  /** Only objects written longer ago than this; DOCUMENT_REAPER_GRACE_HOURS by default. */
  olderThanMs?: number;
  /** Report what would be removed, remove nothing. */
  dryRun?: boolean;
  /** Remove the orphans even when there are more than DOCUMENT_REAPER_MAX_ORPHANS (an operator who checked). */
  force?: boolean;
}

/** What a run found and did: counts, and storage keys (`<appId>/<documentId>`), never a document's content. */
export interface ReapReport {
  dryRun: boolean;
  olderThanMinutes: number;
  /** Objects of the service's shape in the storage. */
  listed: number;
  /** Kept: written within the grace period (an upload may still be recording its row). */
  recent: number;
  /** Kept: a document row names them. */
  referenced: number;
  /** Kept: their application is not in this database (another deployment's bytes, or the wrong database). */
  unknownApplication: number;
  /** Older than the grace period with no row: removed, unless a dry run or `held`. */
  orphans: string[];
  /**
   * More orphans than DOCUMENT_REAPER_MAX_ORPHANS, and no `force`: none was removed. Crashes leave a few; many
   * mean rows that are missing rather than bytes left over (a database restored from an older backup, or a copy
   * of production pointed at its storage), and the bytes may be the only copy left.
   */
  held: boolean;
  removed: number;
  /** Orphans whose removal failed (the log says why); the next run tries again. */
  failed: string[];
}

/**
 * Removes stored document bytes that no document row names: those of an upload whose process died before its
 * row committed, or whose COMMIT's outcome could not be learnt and did not happen, and local disk's leftovers of
 * a write cut short. Only objects older than the grace period are touched; an upload stores its bytes seconds
 * before its row commits, under a key no other upload uses, so a row can no longer come for them (decision 0055).
 * The whole listing is checked before anything is removed: a run that finds more orphans than
 * DOCUMENT_REAPER_MAX_ORPHANS removes none unless forced (`held`).
 */
@Injectable()
export class DocumentReaper {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    @Inject(DOCUMENT_STORAGE) private readonly storage: DocumentStorage,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly logger: PinoLogger,
  ) {
    this.logger.setContext('DocumentReaper');
  }

  async reap(options: ReapOptions = {}): Promise<ReapReport> {
    const olderThanMs = options.olderThanMs ?? this.config.documentReaperGraceHours * 3_600_000;
    // Fixed before the listing starts, so every row check comes after it: an object written before `cutoff`
    // whose row is not there at the check would have been recording its row for longer than the grace period.
    const cutoff = Date.now() - olderThanMs;
    const report: ReapReport = {
      dryRun: options.dryRun ?? false,
      olderThanMinutes: Math.round(olderThanMs / 60_000),
      listed: 0,
      recent: 0,
      referenced: 0,
      unknownApplication: 0,
      orphans: [],
      held: false,
      removed: 0,
      failed: [],
    };
    let batch: StoredObject[] = [];
    for await (const object of this.storage.list()) {
      report.listed++;
      if (object.modifiedAt.getTime() >= cutoff) {
        report.recent++;
        continue;
      }
      batch.push(object);
      if (batch.length === BATCH) {
        await this.settle(batch, report);
        batch = [];
      }
    }
    if (batch.length > 0) await this.settle(batch, report);
    const limit = this.config.documentReaperMaxOrphans;
    if (report.orphans.length > limit && !options.force) {
      report.held = true;
      this.logger.error(
        { orphans: report.orphans.length, limit },
        "document bytes without a row: more than DOCUMENT_REAPER_MAX_ORPHANS, none removed; a database restored from an older backup, or pointed at another deployment's storage? Check with `documents reap --dry-run`, then `documents reap --force`",
      );
    } else if (!report.dryRun) {
      for (const key of report.orphans) await this.removeOrphan(key, report);
    }
    this.logger.info(
      {
        dryRun: report.dryRun,
        listed: report.listed,
        recent: report.recent,
        referenced: report.referenced,
        unknownApplication: report.unknownApplication,
        orphans: report.orphans.length,
        held: report.held,
        removed: report.removed,
        failed: report.failed.length,
      },
      'document bytes without a row reaped',
    );
    return report;
  }

  /** One query for a batch (unique index on the storage key, primary key of the application), then removals. */
  private async settle(batch: StoredObject[], report: ReapReport): Promise<void> {
    // An application id that is not a uuid names no application (and must not reach the uuid cast).
    const candidates = batch.filter((object) => UUID_PATTERN.test(object.appId));
    report.unknownApplication += batch.length - candidates.length;
    // The primary, never a replica: a replica that lags might not show a row yet.
    const rows = (await this.dataSource.query(
      `SELECT o.key,
              EXISTS (SELECT 1 FROM documents d WHERE d.storage_key = o.key) AS referenced,
              EXISTS (SELECT 1 FROM applications a WHERE a.id = o.app_id) AS known
         FROM unnest($1::text[], $2::uuid[]) AS o(key, app_id)`,
      [candidates.map((object) => object.key), candidates.map((object) => object.appId)],
    )) as { key: string; referenced: boolean; known: boolean }[];
    for (const row of rows) {
      if (!row.known) report.unknownApplication++;
      else if (row.referenced) report.referenced++;
      else report.orphans.push(row.key);
    }
  }

  private async removeOrphan(key: string, report: ReapReport): Promise<void> {
    try {
      // Another reaper may have removed it already: a removal of what is not there succeeds.
      await this.storage.remove(key);
      report.removed++;
      this.logger.info({ storageKey: key }, 'removed document bytes that no row names');
    } catch (error) {
      report.failed.push(key);
      this.logger.warn({ err: error, storageKey: key }, 'document bytes that no row names were not removed');
    }
  }
}
