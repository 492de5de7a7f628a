import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsBoolean, IsIn, IsOptional, IsString } from 'class-validator';

export const KYC_CIVIL_STATUSES = ['SINGLE', 'MARRIED', 'DIVORCED', 'WIDOWED', 'CONCUBINE'] as const;

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
