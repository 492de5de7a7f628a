import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import {
  IsIn,
  IsISO31661Alpha2,
  IsNotEmpty,
  IsNumber,
  IsOptional,
  IsString,
  IsUUID,
  Matches,
} from 'class-validator';
import { MaxLength } from '#common/http/validators.js';
import { ALIAS_PATTERN } from '../../alias.js';

const number = () => IsNumber({ allowNaN: false, allowInfinity: false });
const ALIAS_MESSAGE = 'alias must be 6 to 20 letters, digits, dots or hyphens';

/** CreateAccountRequest (all required). */
export class CreateAccountDto {
  @ApiProperty({ enum: ['USER', 'COMPANY'] }) @IsIn(['USER', 'COMPANY']) @IsString() ownerType:
    'USER' | 'COMPANY';
  @ApiProperty({ format: 'uuid', description: 'the user or company that owns the account' })
  @IsUUID()
  @IsString()
  uuid: string;
  @ApiProperty({ format: 'uuid', description: "the caller's application" })
  @IsUUID()
  @IsString()
  appId: string;
  @ApiProperty({ description: 'fixed fee per movement, in the account currency' }) @number() fees: number;
  @ApiProperty() @number() annualWithdrawLimit: number;
  @ApiProperty() @number() annualDepositLimit: number;
  @ApiProperty() @number() monthlyWithdrawLimit: number;
  @ApiProperty() @number() monthlyDepositLimit: number;
}

/** ModifyAccountRequest (none required). */
export class ModifyAccountDto {
  @ApiPropertyOptional({ pattern: ALIAS_PATTERN.source })
  @IsOptional()
  @Matches(ALIAS_PATTERN, { message: ALIAS_MESSAGE })
  @IsString()
  alias?: string;

  @ApiPropertyOptional({ enum: ['ACTIVE', 'INACTIVE', 'PENDING'] })
  @IsOptional()
  @IsIn(['ACTIVE', 'INACTIVE', 'PENDING'])
  @IsString()
  status?: 'ACTIVE' | 'INACTIVE' | 'PENDING';

  @ApiPropertyOptional({ maxLength: 200 })
  @IsOptional()
  @MaxLength(200)
  @IsNotEmpty()
  @IsString()
  name?: string;

  @ApiPropertyOptional({ description: 'ISO 3166-1 alpha-2' })
  @IsOptional()
  @Matches(/^[A-Z]{2}$/, { message: 'nationality must be two uppercase letters (ISO 3166-1 alpha-2)' })
  @IsISO31661Alpha2()
  @IsString()
  nationality?: string;

  @ApiPropertyOptional({
    enum: ['USER', 'COMPANY'],
    description: 'with entityId: move the account to another owner',
  })
  @IsOptional()
  @IsIn(['USER', 'COMPANY'])
  @IsString()
  type?: 'USER' | 'COMPANY';

  @ApiPropertyOptional({ format: 'uuid' }) @IsOptional() @IsUUID() @IsString() entityId?: string;
}

/** UpdateAccountAliasRequest. */
export class UpdateAccountAliasDto {
  @ApiProperty({ pattern: ALIAS_PATTERN.source })
  @Matches(ALIAS_PATTERN, { message: ALIAS_MESSAGE })
  @IsString()
  newAlias: string;
}

export class SetBalanceDto {
  @ApiProperty({
    description: 'the balance the account must have; the difference is posted as an adjustment',
  })
  @number()
  balance: number;
}

/** SetLimitsRequest (closed, all required). */
export class SetLimitsDto {
  @ApiProperty() @number() monthlyWithdrawLimit: number;
  @ApiProperty() @number() monthlyDepositLimit: number;
  @ApiProperty() @number() annualWithdrawLimit: number;
  @ApiProperty() @number() annualDepositLimit: number;
}

export const FEE_TYPES = ['FIXED', 'PERCENTAGE'] as const;

/** SetFeesRequest (closed). */
export class SetFeesDto {
  @ApiProperty({
    enum: FEE_TYPES,
    description: 'FIXED: amount per movement; PERCENTAGE: amount % of each movement',
  })
  @IsIn(FEE_TYPES)
  @IsString()
  feeType: (typeof FEE_TYPES)[number];

  @ApiProperty() @number() amount: number;
}

export class BalanceResponseDto {
  @ApiProperty({ format: 'uuid' }) id: string;
  @ApiProperty({ format: 'uuid' }) accountId: string;
  @ApiProperty({ type: Number, nullable: true }) balance: number | null;
}

export class LimitsDataDto {
  @ApiProperty({ format: 'uuid' }) id: string;
  @ApiProperty({ format: 'uuid' }) accountId: string;
  @ApiProperty() monthlyWithdrawLimit: number;
  @ApiProperty() monthlyDepositLimit: number;
  @ApiProperty() annualWithdrawLimit: number;
  @ApiProperty() annualDepositLimit: number;
}

export class LimitsResponseDto {
  @ApiProperty({ type: LimitsDataDto }) data: LimitsDataDto;
  @ApiProperty() statusCode: number;
}

export class FeesResponseDto {
  @ApiProperty({ format: 'uuid' }) id: string;
  @ApiProperty({ format: 'uuid' }) accountId: string;
  @ApiProperty({ enum: FEE_TYPES }) feeType: string;
  @ApiProperty() amount: number;
}

export class OperadoResponseDto {
  @ApiProperty({ format: 'uuid' }) id: string;
  @ApiProperty({ format: 'uuid' }) accountUUID: string;
  @ApiProperty() monthDeposit: number;
  @ApiProperty() monthWithdraw: number;
  @ApiProperty() annualDeposit: number;
  @ApiProperty() annualWithdraw: number;
  @ApiProperty({ format: 'date-time' }) createdAt: string;
  @ApiProperty({ format: 'date-time' }) updatedAt: string;
}

export class MessageResponseDto {
  @ApiProperty() message: string;
}

export class StatusMessageResponseDto {
  @ApiProperty() status: number;
  @ApiProperty() message: string;
}
