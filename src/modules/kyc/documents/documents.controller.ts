import type { ServerResponse } from 'node:http';
import {
  Body,
  Controller,
  Get,
  Inject,
  Param,
  Post,
  Query,
  Res,
  StreamableFile,
  UploadedFile,
  UseGuards,
} from '@nestjs/common';
import { AcceptsFileUpload } from '#common/http/form-body.js';
import {
  ApiBody,
  ApiConsumes,
  ApiCreatedResponse,
  ApiOkResponse,
  ApiOperation,
  ApiPayloadTooLargeResponse,
  ApiTags,
} from '@nestjs/swagger';
import { AuthEither } from '#common/auth/auth.decorator.js';
import { CurrentPrincipal, type Principal } from '#common/auth/principal.js';
import {
  ApiNotFound,
  ApiTooManyRequests,
  ErrorResponses,
  PayloadTooLargeErrorResponseDto,
} from '#common/http/openapi.js';
import { Paginated, PageQueryDto, type Page } from '#common/http/pagination.js';
import { DocumentsService, type UploadedFile as File } from './documents.service.js';
import { DocumentResponseDto, UploadDocumentDto, UploadDocumentFormDto } from './dto/document.dto.js';
import { UuidPipe } from '#common/http/uuid.pipe.js';
import { UploadAllowed } from './upload-allowed.guard.js';
import { APP_CONFIG, type AppConfig } from '#config/app-config.js';

/** The owner's uploads of the last 24 hours reached DOCUMENT_UPLOADS_PER_OWNER_PER_DAY (decision 0054). */
const UploadLimitResponse = () =>
  ApiTooManyRequests('DOCUMENT_UPLOADS_PER_OWNER_PER_DAY reached; Retry-After says when a place frees');

/** The 413 of an upload: the file over DOCUMENT_MAX_BYTES. */
const FileTooLargeResponse = () =>
  ApiPayloadTooLargeResponse({
    type: PayloadTooLargeErrorResponseDto,
    description: 'file over DOCUMENT_MAX_BYTES',
  });

@ApiTags('KYC')
@Controller()
@ErrorResponses()
export class DocumentsController {
  constructor(
    private readonly documents: DocumentsService,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  @Post('users/:uuid/documents')
  @AuthEither()
  @UseGuards(UploadAllowed('USER'))
  @AcceptsFileUpload('file')
  @ApiOperation({
    summary: 'Upload a document of a user (multipart: name, documentType, file)',
    operationId: 'uploadUserDocument',
  })
  @ApiConsumes('multipart/form-data')
  @ApiBody({ type: UploadDocumentFormDto })
  @ApiCreatedResponse({ type: DocumentResponseDto })
  @FileTooLargeResponse()
  @UploadLimitResponse()
  uploadForUser(
    @CurrentPrincipal() principal: Principal,
    @Param('uuid', UuidPipe) uuid: string,
    @Body() body: UploadDocumentDto,
    @UploadedFile() file: File | undefined,
  ): Promise<DocumentResponseDto> {
    return this.documents.upload(principal, 'USER', uuid, body, file);
  }

  @Get('users/:uuid/documents')
  @AuthEither()
  @Paginated()
  @ApiOperation({ summary: "A user's documents, oldest first", operationId: 'listUserDocuments' })
  @ApiOkResponse({ type: [DocumentResponseDto] })
  listForUser(
    @CurrentPrincipal() principal: Principal,
    @Param('uuid', UuidPipe) uuid: string,
    @Query() query: PageQueryDto,
  ): Promise<Page<DocumentResponseDto>> {
    return this.documents.list(principal, 'USER', uuid, query.limit, query.cursor);
  }

  @Post('companies/:uuid/documents')
  @AuthEither()
  @UseGuards(UploadAllowed('COMPANY'))
  @AcceptsFileUpload('file')
  @ApiOperation({
    summary: 'Upload a document of a company (multipart: name, documentType, file)',
    operationId: 'uploadCompanyDocument',
  })
  @ApiConsumes('multipart/form-data')
  @ApiBody({ type: UploadDocumentFormDto })
  @ApiCreatedResponse({ type: DocumentResponseDto })
  @FileTooLargeResponse()
  @UploadLimitResponse()
  uploadForCompany(
    @CurrentPrincipal() principal: Principal,
    @Param('uuid', UuidPipe) uuid: string,
    @Body() body: UploadDocumentDto,
    @UploadedFile() file: File | undefined,
  ): Promise<DocumentResponseDto> {
    return this.documents.upload(principal, 'COMPANY', uuid, body, file);
  }

  @Get('companies/:uuid/documents')
  @AuthEither()
  @Paginated()
  @ApiOperation({ summary: "A company's documents, oldest first", operationId: 'listCompanyDocuments' })
  @ApiOkResponse({ type: [DocumentResponseDto] })
  listForCompany(
    @CurrentPrincipal() principal: Principal,
    @Param('uuid', UuidPipe) uuid: string,
    @Query() query: PageQueryDto,
  ): Promise<Page<DocumentResponseDto>> {
    return this.documents.list(principal, 'COMPANY', uuid, query.limit, query.cursor);
  }

  @Get('documents/:uuid')
  @AuthEither()
  @ApiOperation({ summary: "A document's metadata", operationId: 'getDocument' })
  @ApiOkResponse({ type: DocumentResponseDto })
  @ApiNotFound('Unknown document')
  get(
    @CurrentPrincipal() principal: Principal,
    @Param('uuid', UuidPipe) uuid: string,
  ): Promise<DocumentResponseDto> {
    return this.documents.get(principal, uuid);
  }

  @Get('documents/:uuid/content')
  @AuthEither()
  @ApiOperation({ summary: 'Download a document', operationId: 'getDocumentContent' })
  // The bytes' types on the 200 only: the errors stay JSON (ApiProduces would retype them all).
  @ApiOkResponse({
    description: 'the bytes as uploaded',
    content: Object.fromEntries(
      ['application/pdf', 'image/jpeg', 'image/png'].map((type) => [
        type,
        { schema: { type: 'string', format: 'binary' } },
      ]),
    ),
  })
  @ApiNotFound('Unknown document')
  async content(
    @CurrentPrincipal() principal: Principal,
    @Param('uuid', UuidPipe) uuid: string,
    @Res({ passthrough: true }) response: ServerResponse,
  ): Promise<StreamableFile> {
    const { contentType, stream, size, name } = await this.documents.content(principal, uuid);
    // A client that stops reading is dropped once its connection has been still for HTTP_REQUEST_TIMEOUT_MS
    // (decision 0074): nothing written, nothing read. Node puts the keep-alive timeout back once the answer ends.
    response.setTimeout(this.config.httpRequestTimeoutMs);
    return new StreamableFile(stream, {
      type: contentType,
      disposition: `attachment; filename="${name.replace(/[^A-Za-z0-9._-]/g, '_')}"`,
      length: size,
    });
  }
}
