import { ApiProperty, ApiPropertyOptional, ApiSchema } from '@nestjs/swagger';
import { IsBoolean, IsIn, IsOptional, IsString } from 'class-validator';
import { nullableRef } from '#common/http/openapi.js';

export const KYC_CIVIL_STATUSES = ['SINGLE', 'MARRIED', 'DIVORCED', 'WIDOWED', 'CONCUBINE'] as const;
const KYC_CIVIL_STATUS_ENUM = { enum: [...KYC_CIVIL_STATUSES], enumName: 'KycCivilStatus' };

/** CreateUserKYCDataRequest. */
@ApiSchema({ name: 'CreateUserKYCDataRequest' })
export class CreateUserKycDataDto {
  @ApiProperty(KYC_CIVIL_STATUS_ENUM) @IsIn(KYC_CIVIL_STATUSES) @IsString() civilStatus: string;
  @ApiProperty() @IsBoolean() isPep: boolean;
  @ApiProperty({ description: 'legally obliged subject (sujeto obligado ante la UIF)' })
  @IsBoolean()
  isSOAUIF: boolean;
}

/** Changes of a user's KYC data; isBlackListed only with client credentials (compliance). */
@ApiSchema({ name: 'UpdateUserKYCDataRequest' })
export class UpdateUserKycDataDto {
  @ApiPropertyOptional(KYC_CIVIL_STATUS_ENUM)
  @IsOptional()
  @IsIn(KYC_CIVIL_STATUSES)
  @IsString()
  civilStatus?: string;
  @ApiPropertyOptional() @IsOptional() @IsBoolean() isPep?: boolean;
  @ApiPropertyOptional() @IsOptional() @IsBoolean() isSOAUIF?: boolean;
  @ApiPropertyOptional({ description: 'client credentials only' })
  @IsOptional()
  @IsBoolean()
  isBlackListed?: boolean;
}

/** UserKYCData. */
@ApiSchema({ name: 'UserKYCData' })
export class UserKycDataDto {
  @ApiProperty({ type: String, format: 'uuid', nullable: true }) uuid: string | null;
  @ApiProperty({ format: 'uuid' }) userId: string;
  @ApiProperty(nullableRef('KycCivilStatus', 'string')) civilStatus: string | null;
  @ApiProperty({ type: Boolean, nullable: true }) isPep: boolean | null;
  @ApiProperty({ type: Boolean, nullable: true }) isSOAUIF: boolean | null;
  @ApiProperty({ type: Boolean, nullable: true }) isBlackListed: boolean | null;
}
