import { ApiProperty, ApiSchema } from '@nestjs/swagger';
import { IsDefined, IsIn, IsObject, IsString } from 'class-validator';

export const KYC_SECTIONS = [
  'datosBasicos',
  'estructuraCorporativa',
  'gestionDeRiesgo',
  'monitoreoDeCumplimiento',
] as const;
export type KycSection = (typeof KYC_SECTIONS)[number];

/** CreateCompanyKYCDataRequest: the datosBasicos section. */
@ApiSchema({ name: 'CreateCompanyKYCDataRequest' })
export class CreateCompanyKycDataDto {
  @ApiProperty({ type: 'object', additionalProperties: true }) @IsObject() @IsDefined() data: Record<
    string,
    unknown
  >;
}

/** UpdateKYCDataRequest. */
@ApiSchema({ name: 'UpdateKYCDataRequest' })
export class UpdateKycDataDto {
  @ApiProperty({ enum: KYC_SECTIONS }) @IsIn(KYC_SECTIONS) @IsString() dataSection: KycSection;
  @ApiProperty({ type: 'object', additionalProperties: true }) @IsObject() @IsDefined() data: Record<
    string,
    unknown
  >;
}

/** A company's KYC data, the four sections (null until given). */
@ApiSchema({ name: 'CompanyKYCData' })
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
