import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsBoolean, IsDefined, IsIn, IsObject, IsOptional, IsString } from 'class-validator';

export const KYC_CIVIL_STATUSES = ['SINGLE', 'MARRIED', 'DIVORCED', 'WIDOWED', 'CONCUBINE'] as const;
export const KYC_SECTIONS = [
  'datosBasicos',
  'estructuraCorporativa',
  'gestionDeRiesgo',
  'monitoreoDeCumplimiento',
] as const;
export type KycSection = (typeof KYC_SECTIONS)[number];

/** CreateUserKYCDataRequest. */
export class CreateUserKycDataDto {
  @ApiProperty({ enum: KYC_CIVIL_STATUSES }) @IsIn(KYC_CIVIL_STATUSES) @IsString() civilStatus: string;
  @ApiProperty() @IsBoolean() isPep: boolean;
  @ApiProperty({ description: 'legally obliged subject (sujeto obligado ante la UIF)' })
  @IsBoolean()
  isSOAUIF: boolean;
}

/** Changes of a user's KYC data; isBlackListed only with client credentials (compliance). */
export class UpdateUserKycDataDto {
  @ApiPropertyOptional({ enum: KYC_CIVIL_STATUSES })
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
export class UserKycDataDto {
  @ApiProperty({ type: String, format: 'uuid', nullable: true }) uuid: string | null;
  @ApiProperty({ format: 'uuid' }) userId: string;
  @ApiProperty({ type: String, enum: KYC_CIVIL_STATUSES, nullable: true }) civilStatus: string | null;
  @ApiProperty({ type: Boolean, nullable: true }) isPep: boolean | null;
  @ApiProperty({ type: Boolean, nullable: true }) isSOAUIF: boolean | null;
  @ApiProperty({ type: Boolean, nullable: true }) isBlackListed: boolean | null;
}

/** CreateCompanyKYCDataRequest: the datosBasicos section. */
export class CreateCompanyKycDataDto {
  @ApiProperty({ type: 'object', additionalProperties: true }) @IsObject() @IsDefined() data: Record<
    string,
    unknown
  >;
}

/** UpdateKYCDataRequest. */
export class UpdateKycDataDto {
  @ApiProperty({ enum: KYC_SECTIONS }) @IsIn(KYC_SECTIONS) @IsString() dataSection: KycSection;
  @ApiProperty({ type: 'object', additionalProperties: true }) @IsObject() @IsDefined() data: Record<
    string,
    unknown
  >;
}

/** A company's KYC data, the four sections (null until given). */
export class CompanyKycDataDto {
  @ApiProperty({ format: 'uuid' }) companyId: string;
  @ApiProperty({ type: 'object', additionalProperties: true, nullable: true }) datosBasicos: Record<
    string,
    unknown
  > | null;
  @ApiProperty({ type: 'object', additionalProperties: true, nullable: true })
  estructuraCorporativa: Record<string, unknown> | null;

  @ApiProperty({ type: 'object', additionalProperties: true, nullable: true })
  gestionDeRiesgo: Record<string, unknown> | null;

  @ApiProperty({ type: 'object', additionalProperties: true, nullable: true })
  monitoreoDeCumplimiento: Record<string, unknown> | null;

  @ApiProperty({ type: String, format: 'date-time', nullable: true }) updated: string | null;
}

export class KycHistoryEntryDto {
  @ApiProperty() id: string;
  @ApiProperty({ enum: ['USER', 'COMPANY'] }) ownerType: string;
  @ApiProperty({ format: 'uuid' }) ownerId: string;
  @ApiProperty({ description: 'company section, or kycData for a user' }) section: string;
  @ApiProperty({ nullable: true, description: 'the value before the change' }) previous: unknown;
  @ApiProperty({ description: 'the value after the change' }) current: unknown;
  @ApiProperty({ description: 'client:<appId> or subject:<uuid>' }) actor: string;
  @ApiProperty({ format: 'date-time' }) at: string;
}
