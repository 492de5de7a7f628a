import type { EnvReaders } from '../env-readers.js';

/**
 * KYC documents: where their bytes are kept, the largest upload, how many an owner uploads a day, and when bytes
 * that no document row names are removed (decision 0055).
 */
export interface DocumentsConfig {
  /** Where document bytes are kept: local disk under DATA_DIR, or an S3-compatible bucket. */
  readonly documentStorage:
    | { kind: 'local' }
    | {
        kind: 's3';
        bucket: string;
        region: string;
        endpoint: string | undefined;
        accessKeyId: string | undefined;
        secretAccessKey: string | undefined;
        forcePathStyle: boolean;
        keyPrefix: string;
      };
  /** Largest document upload accepted. */
  readonly documentMaxBytes: number;
  /** Documents one owner may upload in 24 hours (a user token cannot fill the disk). */
  readonly documentUploadsPerOwnerPerDay: number;
  /** Stored bytes that no document row names are removed once older than this (an upload takes seconds). */
  readonly documentReaperGraceHours: number;
  /** How often the worker removes them; 0: never (the CLI's `documents reap` still does). */
  readonly documentReaperIntervalHours: number;
  /** A run that finds more orphans than this removes none (rows missing, not bytes left over: decision 0055). */
  readonly documentReaperMaxOrphans: number;
}

export function loadDocumentsConfig(readers: EnvReaders): DocumentsConfig {
  return {
    documentStorage: documentStorage(readers),
    documentMaxBytes: readers.int('DOCUMENT_MAX_BYTES', 10 * 1024 * 1024, 1024, 100 * 1024 * 1024),
    documentUploadsPerOwnerPerDay: readers.int('DOCUMENT_UPLOADS_PER_OWNER_PER_DAY', 20, 1, 100_000),
    documentReaperGraceHours: readers.int('DOCUMENT_REAPER_GRACE_HOURS', 168, 1, 8760),
    documentReaperIntervalHours: readers.int('DOCUMENT_REAPER_INTERVAL_HOURS', 24, 0, 720),
    documentReaperMaxOrphans: readers.int('DOCUMENT_REAPER_MAX_ORPHANS', 20, 1, 1_000_000),
  };
}

function documentStorage({ str, bool, url, problems }: EnvReaders): DocumentsConfig['documentStorage'] {
  const kind = str('DOCUMENT_STORAGE') ?? 'local';
  if (kind === 'local') return { kind: 'local' };
  if (kind !== 's3') {
    problems.push(`DOCUMENT_STORAGE must be local or s3 (got "${kind}")`);
    return { kind: 'local' };
  }
  const bucket = str('S3_BUCKET');
  if (!bucket) problems.push('S3_BUCKET is required when DOCUMENT_STORAGE=s3');
  const accessKeyId = str('S3_ACCESS_KEY_ID');
  const secretAccessKey = str('S3_SECRET_ACCESS_KEY');
  if ((accessKeyId === undefined) !== (secretAccessKey === undefined)) {
    problems.push('S3_ACCESS_KEY_ID and S3_SECRET_ACCESS_KEY go together');
  }
  const endpoint = url('S3_ENDPOINT', ['http:', 'https:'], { credentials: false });
  return {
    kind: 's3',
    bucket: bucket ?? '',
    region: str('S3_REGION') ?? 'us-east-1',
    endpoint,
    accessKeyId,
    secretAccessKey,
    forcePathStyle: bool('S3_FORCE_PATH_STYLE', endpoint !== undefined),
    keyPrefix: (str('S3_KEY_PREFIX') ?? '').replace(/^\/+|\/+$/g, ''),
  };
}
