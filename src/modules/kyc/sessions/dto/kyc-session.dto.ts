import { ApiProperty, ApiPropertyOptional, ApiSchema } from '@nestjs/swagger';
import { IsIn, IsOptional, IsString, IsUUID } from 'class-validator';
import { OWNER_TYPE_ENUM } from '../../dto/owner-enums.js';
import { KYC_STEPS } from '../entities/kyc-session.entity.js';

/** A KYC step's name, and a step's status (also the values of the kyc_steep_update webhook). */
export const KYC_STEP_ENUM = { enum: [...KYC_STEPS], enumName: 'KycStep' };
const KYC_STEP_STATUS_ENUM = { enum: ['PENDING', 'SUCCESS', 'FAILED'], enumName: 'KycStepStatus' };

@ApiSchema({ name: 'CreateKycSessionRequest' })
export class CreateKycSessionDto {
  @ApiProperty(OWNER_TYPE_ENUM) @IsIn(['USER', 'COMPANY']) @IsString() ownerType: 'USER' | 'COMPANY';
  @ApiProperty({ format: 'uuid', description: 'the user or company' }) @IsUUID() @IsString() ownerId: string;
}

@ApiSchema({ name: 'SubmitKycStepRequest' })
export class SubmitKycStepDto {
  @ApiPropertyOptional({
    format: 'uuid',
    description: 'an uploaded document of the owner; required except for GOVERNMENTAL_CHECK_SELFIE',
  })
  @IsOptional()
  @IsUUID()
  @IsString()
  documentUuid?: string;
}

@ApiSchema({ name: 'KycSessionStep' })
export class KycStepDto {
  @ApiProperty(KYC_STEP_ENUM) step: string;
  @ApiProperty(KYC_STEP_STATUS_ENUM) status: string;
  @ApiProperty({ type: String, format: 'uuid', nullable: true }) documentUuid: string | null;
  @ApiProperty({ type: String, format: 'date-time', nullable: true }) submittedAt: string | null;
  @ApiProperty({ type: String, format: 'date-time', nullable: true }) completedAt: string | null;
  @ApiProperty({ type: String, nullable: true }) failureReason: string | null;
}

@ApiSchema({ name: 'KycSession' })
export class KycSessionDto {
  @ApiProperty({ format: 'uuid' }) uuid: string;
  @ApiProperty(OWNER_TYPE_ENUM) ownerType: string;
  @ApiProperty({ format: 'uuid' }) ownerId: string;
  @ApiProperty({ enum: ['PENDING', 'IN_PROGRESS', 'APPROVED', 'REJECTED'] }) status: string;
  @ApiProperty({ type: [KycStepDto] }) steps: KycStepDto[];
  @ApiProperty({ format: 'date-time' }) created: string;
  @ApiProperty({ format: 'date-time' }) updated: string;
}
