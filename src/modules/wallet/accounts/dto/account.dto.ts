import { ApiProperty, ApiPropertyOptional, ApiSchema } from '@nestjs/swagger';
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
import { sharedType } from '#common/http/openapi.js';
import { MaxLength } from '#common/http/validators.js';
import { OWNER_TYPE_ENUM } from '#modules/kyc/dto/owner-enums.js';
import { ACCOUNT_STATUS_ENUM } from '#modules/users/dto/user.dto.js';
import { ALIAS_PATTERN } from '../../alias.js';

const number = () => IsNumber({ allowNaN: false, allowInfinity: false });
const ALIAS_MESSAGE = 'alias must be 6 to 20 letters, digits, dots or hyphens';

/** CreateAccountRequest (all required). */
@ApiSchema({ name: 'CreateAccountRequest' })
export class CreateAccountDto {
  @ApiProperty(OWNER_TYPE_ENUM) @IsIn(['USER', 'COMPANY']) @IsString() ownerType: 'USER' | 'COMPANY';
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
@ApiSchema({ name: 'ModifyAccountRequest' })
export class ModifyAccountDto {
  @ApiPropertyOptional(sharedType('AccountAlias'))
  @IsOptional()
  @Matches(ALIAS_PATTERN, { message: ALIAS_MESSAGE })
  @IsString()
  alias?: string;

  @ApiPropertyOptional(ACCOUNT_STATUS_ENUM)
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

  @ApiPropertyOptional(sharedType('CountryCode'))
  @IsOptional()
  @Matches(/^[A-Z]{2}$/, { message: 'nationality must be two uppercase letters (ISO 3166-1 alpha-2)' })
  @IsISO31661Alpha2()
  @IsString()
  nationality?: string;

  @ApiPropertyOptional({
    ...OWNER_TYPE_ENUM,
    description: 'with entityId: move the account to another owner',
  })
  @IsOptional()
  @IsIn(['USER', 'COMPANY'])
  @IsString()
  type?: 'USER' | 'COMPANY';

  @ApiPropertyOptional({ format: 'uuid' }) @IsOptional() @IsUUID() @IsString() entityId?: string;
}

/** UpdateAccountAliasRequest. */
@ApiSchema({ name: 'UpdateAccountAliasRequest' })
export class UpdateAccountAliasDto {
  @ApiProperty(sharedType('AccountAlias'))
  @Matches(ALIAS_PATTERN, { message: ALIAS_MESSAGE })
  @IsString()
  newAlias: string;
}

@ApiSchema({ name: 'SetBalanceRequest' })
export class SetBalanceDto {
  @ApiProperty({
    description: 'the balance the account must have; the difference is posted as an adjustment',
  })
  @number()
  balance: number;
}

/** SetLimitsRequest (closed, all required). */
@ApiSchema({ name: 'SetLimitsRequest' })
export class SetLimitsDto {
  @ApiProperty() @number() monthlyWithdrawLimit: number;
  @ApiProperty() @number() monthlyDepositLimit: number;
  @ApiProperty() @number() annualWithdrawLimit: number;
  @ApiProperty() @number() annualDepositLimit: number;
}

export const FEE_TYPES = ['FIXED', 'PERCENTAGE'] as const;
const FEE_TYPE_ENUM = { enum: [...FEE_TYPES], enumName: 'FeeType' };

/** SetFeesRequest (closed). */
@ApiSchema({ name: 'SetFeesRequest' })
export class SetFeesDto {
  @ApiProperty({
    ...FEE_TYPE_ENUM,
    description: 'FIXED: amount per movement; PERCENTAGE: amount % of each movement',
  })
  @IsIn(FEE_TYPES)
  @IsString()
  feeType: (typeof FEE_TYPES)[number];

  @ApiProperty() @number() amount: number;
}

@ApiSchema({ name: 'BalanceResponse' })
export class BalanceResponseDto {
  @ApiProperty({ format: 'uuid' }) id: string;
  @ApiProperty({ format: 'uuid' }) accountId: string;
  @ApiProperty({ type: Number, nullable: true }) balance: number | null;
}

@ApiSchema({ name: 'LimitsData' })
export class LimitsDataDto {
  @ApiProperty({ format: 'uuid' }) id: string;
  @ApiProperty({ format: 'uuid' }) accountId: string;
  @ApiProperty() monthlyWithdrawLimit: number;
  @ApiProperty() monthlyDepositLimit: number;
  @ApiProperty() annualWithdrawLimit: number;
  @ApiProperty() annualDepositLimit: number;
}

@ApiSchema({ name: 'LimitsResponse' })
export class LimitsResponseDto {
  @ApiProperty({ type: LimitsDataDto }) data: LimitsDataDto;
  @ApiProperty() statusCode: number;
}

@ApiSchema({ name: 'FeesResponse' })
export class FeesResponseDto {
  @ApiProperty({ format: 'uuid' }) id: string;
  @ApiProperty({ format: 'uuid' }) accountId: string;
  @ApiProperty(FEE_TYPE_ENUM) feeType: string;
  @ApiProperty() amount: number;
}

@ApiSchema({ name: 'OperadoResponse' })
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

/** FullOperadoResponse: the same fields as OperadoResponse, under the interface's own name. */
@ApiSchema({ name: 'FullOperadoResponse' })
export class FullOperadoResponseDto extends OperadoResponseDto {}

@ApiSchema({ name: 'MessageResponse' })
export class MessageResponseDto {
  @ApiProperty() message: string;
}

@ApiSchema({ name: 'StatusMessageResponse' })
export class StatusMessageResponseDto {
  @ApiProperty() status: number;
  @ApiProperty() message: string;
}
