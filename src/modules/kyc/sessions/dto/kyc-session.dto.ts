import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsIn, IsOptional, IsString, IsUUID } from 'class-validator';
import { KYC_STEPS } from '../entities/kyc-session.entity.js';

export class CreateKycSessionDto {
  @ApiProperty({ enum: ['USER', 'COMPANY'] }) @IsIn(['USER', 'COMPANY']) @IsString() ownerType:
    'USER' | 'COMPANY';
  @ApiProperty({ format: 'uuid', description: 'the user or company' }) @IsUUID() @IsString() ownerId: string;
}

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

export class KycStepDto {
  @ApiProperty({ enum: KYC_STEPS }) step: string;
  @ApiProperty({ enum: ['PENDING', 'SUCCESS', 'FAILED'] }) status: string;
  @ApiProperty({ type: String, format: 'uuid', nullable: true }) documentUuid: string | null;
  @ApiProperty({ type: String, format: 'date-time', nullable: true }) submittedAt: string | null;
  @ApiProperty({ type: String, format: 'date-time', nullable: true }) completedAt: string | null;
  @ApiProperty({ type: String, nullable: true }) failureReason: string | null;
}

export class KycSessionDto {
  @ApiProperty({ format: 'uuid' }) uuid: string;
  @ApiProperty({ enum: ['USER', 'COMPANY'] }) ownerType: string;
  @ApiProperty({ format: 'uuid' }) ownerId: string;
  @ApiProperty({ enum: ['PENDING', 'IN_PROGRESS', 'APPROVED', 'REJECTED'] }) status: string;
  @ApiProperty({ type: [KycStepDto] }) steps: KycStepDto[];
  @ApiProperty({ format: 'date-time' }) created: string;
  @ApiProperty({ format: 'date-time' }) updated: string;
}
