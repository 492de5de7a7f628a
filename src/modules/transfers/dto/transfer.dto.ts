import { ApiProperty, ApiPropertyOptional, ApiSchema } from '@nestjs/swagger';
import { IsDateOrUtcInstant } from '#common/http/instant.js';
import { PageQueryDto } from '#common/http/pagination.js';
import { Type } from 'class-transformer';
import {
  IsDefined,
  IsIn,
  IsNotEmpty,
  IsNumber,
  IsObject,
  IsOptional,
  IsString,
  IsUUID,
  Matches,
  ValidateNested,
} from 'class-validator';
import { sharedType } from '#common/http/openapi.js';
import { IsNotBlank, MaxLength } from '#common/http/validators.js';
import { OWNER_TYPE_ENUM } from '#modules/kyc/dto/owner-enums.js';
import { TRANSFER_STATUSES } from '../transfer-status.js';

export const CONCEPTS = [
  'VAR',
  'ALQ',
  'APC',
  'BRH',
  'BRN',
  'CUO',
  'EXP',
  'FAC',
  'HAB',
  'HON',
  'OIN',
  'OIH',
  'PRE',
  'ROP',
  'SEG',
  'SIS',
  'SON',
] as const;

/** The enums of transfers, each one component of the document (enumName). */
export const CONCEPT_ENUM = { enum: [...CONCEPTS], enumName: 'TransactionConcept' };
export const TRANSACTION_STATUS_ENUM = { enum: [...TRANSFER_STATUSES], enumName: 'TransactionStatus' };
export const MOVEMENT_TYPE_ENUM = { enum: ['DEPOSIT', 'WITHDRAW'], enumName: 'MovementType' };
const IDENTIFIER_TYPE_ENUM = { enum: ['CBU', 'CVU'], enumName: 'IdentifierType' };

/** CreateTransactionRequest.counterParty (closed, all required). */
@ApiSchema({ name: 'CreateTransactionCounterParty' })
export class CreateCounterPartyDto {
  @ApiProperty({ description: 'legal name preferred', maxLength: 200 })
  @MaxLength(200)
  @IsNotBlank()
  @IsString()
  name: string;
  @ApiProperty({ description: 'tax id (CUIT/CUIL) of the party' })
  @MaxLength(20)
  @IsNotEmpty()
  @IsString()
  cValue: string;
  @ApiProperty(IDENTIFIER_TYPE_ENUM) @IsIn(['CBU', 'CVU']) @IsString() identifierType: 'CBU' | 'CVU';
  @ApiProperty({
    ...sharedType('AccountCXU'),
    example: '0110599590000001234568',
    description: 'valid check digits; a CVU starts with 000',
  })
  @Matches(/^\d{22}$/, { message: 'identifier must be 22 digits' })
  @IsString()
  identifier: string;

  @ApiProperty({ maxLength: 200 }) @MaxLength(200) @IsString() branchName: string;
}

/** CreateTransactionRequest (closed). */
@ApiSchema({ name: 'CreateTransactionRequest' })
export class CreateTransactionDto {
  @ApiProperty({ format: 'uuid' }) @IsUUID() @IsString() accountUUID: string;
  @ApiProperty(MOVEMENT_TYPE_ENUM) @IsIn(['DEPOSIT', 'WITHDRAW']) @IsString() movementType:
    'DEPOSIT' | 'WITHDRAW';

  @ApiProperty({ type: CreateCounterPartyDto })
  @ValidateNested()
  @Type(() => CreateCounterPartyDto)
  @IsObject()
  @IsDefined()
  counterParty: CreateCounterPartyDto;

  @ApiProperty({
    format: 'float',
    minimum: 1,
    description: 'in the account currency, at most its minor units of decimals',
  })
  @IsNumber({ allowNaN: false, allowInfinity: false })
  amount: number;

  @ApiProperty(CONCEPT_ENUM) @IsIn(CONCEPTS) @IsString() concept: (typeof CONCEPTS)[number];
  @ApiPropertyOptional({ maxLength: 200 }) @IsOptional() @MaxLength(200) @IsString() summary?: string;
}

export class PartyDto {
  @ApiProperty({ format: 'uuid' }) uuid: string;
  @ApiProperty() name: string;
  @ApiPropertyOptional({ description: 'exactly one of cuit or cuil' }) cuit?: string;
  @ApiPropertyOptional() cuil?: string;
}

/** TransactionInternalParty. */
@ApiSchema({ name: 'TransactionInternalParty' })
export class InternalPartyDto extends PartyDto {
  @ApiProperty(OWNER_TYPE_ENUM) type: 'USER' | 'COMPANY';
  @ApiPropertyOptional({ ...sharedType('AccountCXU'), description: 'exactly one of cvu or cbu' })
  cvu?: string;
  @ApiPropertyOptional(sharedType('AccountCXU')) cbu?: string;
}

/** TransactionCounterParty. */
@ApiSchema({ name: 'TransactionCounterParty' })
export class CounterPartyDto extends PartyDto {
  @ApiProperty({ enum: ['INTERNAL', 'EXTERNAL'] }) type: 'INTERNAL' | 'EXTERNAL';
  @ApiProperty({ enum: ['Fisica', 'Juridica'] }) personType: 'Fisica' | 'Juridica';
  @ApiProperty(IDENTIFIER_TYPE_ENUM) identifierType: 'CBU' | 'CVU';
  @ApiProperty({ ...sharedType('AccountCXU'), description: 'the CBU or CVU' }) identifier: string;
}

/** TransactionInfo. */
@ApiSchema({ name: 'TransactionInfo' })
export class TransactionInfoDto {
  @ApiProperty({ format: 'uuid' }) uuid: string;
  @ApiProperty({ type: String, nullable: true, description: 'the clearing house id (neutral name)' })
  clearingId: string | null;
  @ApiProperty(MOVEMENT_TYPE_ENUM) type: 'DEPOSIT' | 'WITHDRAW';
  @ApiProperty(TRANSACTION_STATUS_ENUM) status: string;

  @ApiProperty({ type: InternalPartyDto }) account: InternalPartyDto;
  @ApiProperty({ type: CounterPartyDto }) counterParty: CounterPartyDto;
  @ApiProperty() amount: number;
  @ApiProperty(sharedType('CurrencyCode')) currency: string;
  @ApiProperty(CONCEPT_ENUM) concept: string;
  @ApiProperty({ type: String, nullable: true }) summary: string | null;
  @ApiProperty({ type: String, nullable: true }) description: string | null;
  @ApiProperty({ type: Number, nullable: true }) taxes: number | null;
  @ApiProperty({ type: Number, nullable: true }) fees: number | null;
  @ApiProperty({ format: 'date-time' }) createdAt: string;
}

/** AmountField. */
@ApiSchema({ name: 'AmountField' })
export class AmountDto {
  @ApiProperty({ minimum: 1 }) value: number;
  @ApiProperty(sharedType('CurrencyCode')) currency: string;
}

/** CreateTransactionResponse: TransactionInfo with amount as an object, currency, movementType, created. */
@ApiSchema({ name: 'CreateTransactionResponse' })
export class CreateTransactionResponseDto {
  @ApiProperty({ format: 'uuid' }) uuid: string;
  @ApiProperty({ type: String, nullable: true }) clearingId: string | null;
  @ApiProperty(MOVEMENT_TYPE_ENUM) type: 'DEPOSIT' | 'WITHDRAW';
  @ApiProperty(TRANSACTION_STATUS_ENUM) status: string;
  @ApiProperty({ type: InternalPartyDto }) account: InternalPartyDto;
  @ApiProperty({ type: CounterPartyDto }) counterParty: CounterPartyDto;
  @ApiProperty({ type: AmountDto }) amount: AmountDto;
  @ApiProperty(sharedType('CurrencyCode')) currency: string;
  @ApiProperty(MOVEMENT_TYPE_ENUM) movementType: 'DEPOSIT' | 'WITHDRAW';
  @ApiProperty(CONCEPT_ENUM) concept: string;
  @ApiProperty({ type: String, nullable: true }) summary: string | null;
  @ApiProperty({ type: String, nullable: true }) description: string | null;
  @ApiProperty({ type: Number, nullable: true }) taxes: number | null;
  @ApiProperty({ type: Number, nullable: true }) fees: number | null;
  @ApiProperty({ format: 'date-time' }) created: string;
}

export class TransactionListQueryDto extends PageQueryDto {
  @IsOptional()
  @IsIn([
    'COMMITING',
    'INICIADO',
    'EN_CURSO',
    'ERROR_DATOS',
    'SIN_GARANTIA',
    'ERROR_ACREDITACION',
    'ACREDITADO',
  ])
  @IsString()
  status?: string;
  @IsOptional() @IsIn(['DEPOSIT', 'WITHDRAW']) @IsString() movementType?: string;
  @IsOptional()
  @IsDateOrUtcInstant('from')
  @IsString()
  from?: string;
  @IsOptional()
  @IsDateOrUtcInstant('to')
  @IsString()
  to?: string;
}
