import { ApiProperty, ApiPropertyOptional, ApiSchema } from '@nestjs/swagger';
import { IsNotEmpty, IsOptional, IsString, Matches } from 'class-validator';
import { MaxLength } from '#common/http/validators.js';

/** UploadDocumentRequest (multipart/form-data): name (optional), documentType, file. */
export class UploadDocumentDto {
  @ApiPropertyOptional({ maxLength: 200 })
  @IsOptional()
  @MaxLength(200)
  @IsNotEmpty()
  @IsString()
  name?: string;

  @ApiProperty({ example: 'DNI_FRONT', description: 'free text of up to 50 letters, digits, _ and -' })
  @Matches(/^[A-Za-z0-9_-]{1,50}$/, { message: 'documentType must be 1-50 letters, digits, _ or -' })
  @IsString()
  documentType: string;
}

/** UploadDocumentRequest: the multipart form as documented (the file part is taken by the upload interceptor). */
@ApiSchema({ name: 'UploadDocumentRequest' })
export class UploadDocumentFormDto extends UploadDocumentDto {
  @ApiProperty({ type: 'string', format: 'binary', description: 'PDF, JPEG or PNG (checked from the bytes)' })
  file: unknown;
}

/** Document. */
@ApiSchema({ name: 'Document' })
export class DocumentResponseDto {
  @ApiProperty({ format: 'uuid' }) uuid: string;
  @ApiProperty() name: string;
  @ApiProperty({ description: 'the documentType given at upload' }) type: string;
  @ApiProperty({ enum: ['application/pdf', 'image/jpeg', 'image/png'] }) contentType: string;
  @ApiProperty({ description: 'where to download it (same credentials)' }) url: string;
  @ApiProperty({ format: 'date-time' }) created: string;
}
