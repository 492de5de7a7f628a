import { createHash, randomUUID } from 'node:crypto';
import type { Readable } from 'node:stream';
import { Inject, Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { fileTypeFromBuffer } from 'file-type';
import { DataSource, type EntityManager } from 'typeorm';
import type { Principal } from '#common/auth/principal.js';
import { oldestFirstRows, placeFreesSql } from '#common/database/sql.js';
import { currentTransactionId, transactionCommitted } from '#common/database/transaction-fate.js';
import { NotFoundError, TooManyRequestsError, ValidationFailedError } from '#common/errors/domain-errors.js';
import { PinoLogger } from '#common/logging/pino-logger.js';
import { assertStorableJson } from '#common/http/json-body.middleware.js';
import { firstCodePoints } from '#common/http/validators.js';
import { DEFAULT_PAGE_SIZE, toPage, type Page } from '#common/http/pagination.js';
import { APP_CONFIG, type AppConfig } from '#config/app-config.js';
import type { OwnerType } from '../owners/kyc-owners.port.js';
import { KycOwners } from '../owners/kyc-owners.js';
import { DOCUMENT_STORAGE, type DocumentStorage } from './document-storage.port.js';
import type { DocumentResponseDto, UploadDocumentDto } from './dto/document.dto.js';
import { DocumentEntity } from './entities/document.entity.js';
import { auditAppend, requestActor } from '#modules/audit/audit-trail.js';

export const ALLOWED_CONTENT_TYPES = ['application/pdf', 'image/jpeg', 'image/png'] as const;

export interface UploadedFile {
  buffer: Buffer;
  originalname: string;
  size: number;
}

/** KYC documents: type sniffed from the bytes, SHA-256 kept, bytes in the document storage. */
@Injectable()
export class DocumentsService {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    @Inject(DOCUMENT_STORAGE) private readonly storage: DocumentStorage,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly owners: KycOwners,
    private readonly logger: PinoLogger,
  ) {
    this.logger.setContext('DocumentsService');
  }

  /**
   * What an upload needs before its body is read (the route's UploadAllowed guard asks it, decision 0074): an
   * owner the principal reaches (else 404), with a place left in its daily limit (else 429). Checked again, with
   * the owner locked, when the document is recorded.
   */
  async admitUpload(principal: Principal, ownerType: OwnerType, ownerId: string): Promise<void> {
    await this.requireOwner(principal, ownerType, ownerId);
    await this.checkUploadLimit(this.dataSource.manager, principal.appId, ownerType, ownerId);
  }

  /** A document's upload, once `admitUpload` has let its body be read. */
  async upload(
    principal: Principal,
    ownerType: OwnerType,
    ownerId: string,
    input: UploadDocumentDto,
    file: UploadedFile | undefined,
  ): Promise<DocumentResponseDto> {
    // A multipart body's fields skip the JSON body's check: the same rule (no NUL, well-formed Unicode), here.
    assertStorableJson({ ...input, filename: file?.originalname });
    if (!file || file.size === 0) throw ValidationFailedError.single('file', 'required', 'file is required');
    if (file.size > this.config.documentMaxBytes) {
      throw ValidationFailedError.single(
        'file',
        'invalid',
        `file is larger than ${this.config.documentMaxBytes} bytes`,
      );
    }
    const detected = await fileTypeFromBuffer(file.buffer);
    if (!detected || !(ALLOWED_CONTENT_TYPES as readonly string[]).includes(detected.mime)) {
      throw ValidationFailedError.single(
        'file',
        'invalid',
        `file must be one of ${ALLOWED_CONTENT_TYPES.join(', ')}`,
      );
    }
    const id = randomUUID();
    const storageKey = `${principal.appId}/${id}`;
    await this.storage.put(storageKey, file.buffer);
    const row = this.dataSource.getRepository(DocumentEntity).create({
      id,
      appId: principal.appId,
      ownerType,
      ownerId,
      // 200 code points, as the DTO counts them: a UTF-16 cut could split a surrogate pair (decision 0097).
      name: firstCodePoints(input.name ?? file.originalname ?? input.documentType, 200) || input.documentType,
      documentType: input.documentType,
      contentType: detected.mime,
      size: file.size,
      sha256: createHash('sha256').update(file.buffer).digest('hex'),
      storageKey,
    });
    // The transaction's id, to ask after a failure whether it committed (txid_status).
    let xid: string | undefined;
    try {
      await this.dataSource.transaction(async (manager) => {
        xid = await currentTransactionId(manager);
        // The owner again, locked: one deleted while the bytes were stored gets no document (404).
        await this.owners.find(manager, principal, ownerType, ownerId, true);
        await this.checkUploadLimit(manager, principal.appId, ownerType, ownerId);
        await manager.insert(DocumentEntity, row);
        await auditAppend(manager, requestActor(principal), {
          resourceType: 'document',
          resourceId: id,
          outcome: 'created',
        });
      });
    } catch (error) {
      // A COMMIT whose answer was lost (the connection cut while or after the server committed) throws too: the
      // row is there, or is about to be, and so must the bytes be. The transaction's fate is asked for.
      const recorded = await transactionCommitted(this.dataSource, xid);
      if (recorded) return this.view(row);
      if (recorded === undefined) {
        // Not known (the database still unreachable): the bytes stay, the log names them.
        this.logger.warn({ storageKey }, 'a document whose recording failed may be in storage without a row');
        throw error;
      }
      // No row names the bytes: they go too (an identity document kept with nothing pointing to it). Should
      // that fail as well, the log says which key was left.
      await this.storage
        .remove(storageKey)
        .catch((removal: unknown) =>
          this.logger.warn(
            { err: removal, storageKey },
            'the bytes of a document not recorded were left in storage',
          ),
        );
      throw error;
    }
    return this.view(row);
  }

  /**
   * At most DOCUMENT_UPLOADS_PER_OWNER_PER_DAY documents per owner in 24 hours (429 with Retry-After): documents
   * are kept (no route deletes one), so a user token looping uploads would otherwise fill the storage, which is
   * the embedded database's disk by default. Counted through the owner's index, stopping at the limit.
   */
  private async checkUploadLimit(
    manager: EntityManager,
    appId: string,
    ownerType: OwnerType,
    ownerId: string,
  ): Promise<void> {
    const limit = this.config.documentUploadsPerOwnerPerDay;
    // When the limit is reached, the seconds until a place frees (the owner's index, newest first).
    const [reached] = (await manager.query(
      `SELECT ${placeFreesSql('documents', 'app_id = $1 AND owner_id = $2 AND owner_type = $3', '1 day', '$4')} AS seconds`,
      [appId, ownerId, ownerType, limit],
    )) as { seconds: number | null }[];
    if (reached.seconds !== null) {
      throw new TooManyRequestsError(
        `an owner uploads at most ${limit} documents a day`,
        Math.max(1, reached.seconds),
      );
    }
  }

  async list(
    principal: Principal,
    ownerType: OwnerType,
    ownerId: string,
    limit = DEFAULT_PAGE_SIZE,
    cursor?: string,
  ): Promise<Page<DocumentResponseDto>> {
    await this.requireOwner(principal, ownerType, ownerId);
    const rows = await oldestFirstRows(
      this.dataSource
        .getRepository(DocumentEntity)
        .createQueryBuilder('d')
        .where('d.app_id = :appId AND d.owner_id = :ownerId AND d.owner_type = :ownerType', {
          appId: principal.appId,
          ownerId,
          ownerType,
        }),
      'd',
      limit,
      cursor,
    );
    return toPage(rows, limit, (row) => this.view(row));
  }

  async get(principal: Principal, id: string): Promise<DocumentResponseDto> {
    return this.view(await this.find(principal, id));
  }

  async content(
    principal: Principal,
    id: string,
  ): Promise<{ contentType: string; stream: Readable; size: number; name: string }> {
    const document = await this.find(principal, id);
    // A stream (decision 0074): what a download holds is the stream's buffer, whatever the file's size.
    const stream = await this.storage.get(document.storageKey);
    try {
      // A read of a document's content: audited once the content is at hand (a missing file reads nothing).
      await this.dataSource.transaction((manager) =>
        auditAppend(manager, requestActor(principal), {
          resourceType: 'document',
          resourceId: document.id,
          outcome: 'read',
        }),
      );
    } catch (error) {
      stream.destroy();
      throw error;
    }
    return { contentType: document.contentType, stream, size: document.size, name: document.name };
  }

  /** A document the principal may reach (through its owner), or 404. */
  async find(principal: Principal, id: string): Promise<DocumentEntity> {
    const document = await this.dataSource
      .getRepository(DocumentEntity)
      .findOneBy({ id, appId: principal.appId });
    if (!document || (principal.kind === 'subject' && document.ownerId !== principal.subject)) {
      throw new NotFoundError(id, 'Document not found');
    }
    await this.requireOwner(principal, document.ownerType, document.ownerId).catch((error: unknown) => {
      throw error instanceof NotFoundError ? new NotFoundError(id, 'Document not found') : error;
    });
    return document;
  }

  private async requireOwner(principal: Principal, ownerType: OwnerType, ownerId: string): Promise<void> {
    await this.owners.find(this.dataSource.manager, principal, ownerType, ownerId);
  }

  private view(document: DocumentEntity): DocumentResponseDto {
    return {
      uuid: document.id,
      name: document.name,
      type: document.documentType,
      contentType: document.contentType,
      url: `${this.config.publicBaseUrl}documents/${document.id}/content`,
      created: document.createdAt.toISOString(),
    };
  }
}
