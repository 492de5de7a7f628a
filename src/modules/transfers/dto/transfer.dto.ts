import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
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
import { MaxLength } from '#common/http/validators.js';

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

/** CreateTransactionRequest.counterParty (closed, all required). */
export class CreateCounterPartyDto {
  @ApiProperty({ description: 'legal name preferred', maxLength: 200 })
  @MaxLength(200)
  @IsNotEmpty()
  @IsString()
  name: string;
  @ApiProperty({ description: 'tax id (CUIT/CUIL) of the party' })
  @MaxLength(20)
  @IsNotEmpty()
  @IsString()
  cValue: string;
  @ApiProperty({ enum: ['CBU', 'CVU'] }) @IsIn(['CBU', 'CVU']) @IsString() identifierType: 'CBU' | 'CVU';
  @ApiProperty({
    pattern: '^\\d{22}$',
    example: '0110599590000001234568',
    description: '22 digits, valid check digits; a CVU starts with 000',
  })
  @Matches(/^\d{22}$/, { message: 'identifier must be 22 digits' })
  @IsString()
  identifier: string;

  @ApiProperty({ maxLength: 200 }) @MaxLength(200) @IsString() branchName: string;
}

/** CreateTransactionRequest (closed). */
export class CreateTransactionDto {
  @ApiProperty({ format: 'uuid' }) @IsUUID() @IsString() accountUUID: string;
  @ApiProperty({ enum: ['DEPOSIT', 'WITHDRAW'] }) @IsIn(['DEPOSIT', 'WITHDRAW']) @IsString() movementType:
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

  @ApiProperty({ enum: CONCEPTS }) @IsIn(CONCEPTS) @IsString() concept: (typeof CONCEPTS)[number];
  @ApiPropertyOptional({ maxLength: 200 }) @IsOptional() @MaxLength(200) @IsString() summary?: string;
}

/** The transaction status values of the interface. */
const TRANSACTION_STATUSES = [
  'COMMITING',
  'INICIADO',
  'EN_CURSO',
  'ERROR_DATOS',
  'SIN_GARANTIA',
  'ERROR_ACREDITACION',
  'ACREDITADO',
];

export class PartyDto {
  @ApiProperty({ format: 'uuid' }) uuid: string;
  @ApiProperty() name: string;
  @ApiPropertyOptional({ description: 'exactly one of cuit or cuil' }) cuit?: string;
  @ApiPropertyOptional() cuil?: string;
}

export class InternalPartyDto extends PartyDto {
  @ApiProperty({ enum: ['USER', 'COMPANY'] }) type: 'USER' | 'COMPANY';
  @ApiPropertyOptional({ description: 'exactly one of cvu or cbu' }) cvu?: string;
  @ApiPropertyOptional() cbu?: string;
}

export class CounterPartyDto extends PartyDto {
  @ApiProperty({ enum: ['INTERNAL', 'EXTERNAL'] }) type: 'INTERNAL' | 'EXTERNAL';
  @ApiProperty({ enum: ['Fisica', 'Juridica'] }) personType: 'Fisica' | 'Juridica';
  @ApiProperty({ enum: ['CBU', 'CVU'] }) identifierType: 'CBU' | 'CVU';
  @ApiProperty() identifier: string;
}

/** TransactionInfo. */
export class TransactionInfoDto {
  @ApiProperty({ format: 'uuid' }) uuid: string;
  @ApiProperty({ type: String, nullable: true, description: 'the clearing house id (neutral name)' })
  clearingId: string | null;
  @ApiProperty({ enum: ['DEPOSIT', 'WITHDRAW'] }) type: 'DEPOSIT' | 'WITHDRAW';
  @ApiProperty({ enum: TRANSACTION_STATUSES }) status: string;

  @ApiProperty({ type: InternalPartyDto }) account: InternalPartyDto;
  @ApiProperty({ type: CounterPartyDto }) counterParty: CounterPartyDto;
  @ApiProperty() amount: number;
  @ApiProperty() currency: string;
  @ApiProperty({ enum: CONCEPTS }) concept: string;
  @ApiProperty({ type: String, nullable: true }) summary: string | null;
  @ApiProperty({ type: String, nullable: true }) description: string | null;
  @ApiProperty({ type: Number, nullable: true }) taxes: number | null;
  @ApiProperty({ type: Number, nullable: true }) fees: number | null;
  @ApiProperty({ format: 'date-time' }) createdAt: string;
}

export class AmountDto {
  @ApiProperty({ minimum: 1 }) value: number;
  @ApiProperty() currency: string;
}

/** CreateTransactionResponse: TransactionInfo with amount as an object, currency, movementType, created. */
export class CreateTransactionResponseDto {
  @ApiProperty({ format: 'uuid' }) uuid: string;
  @ApiProperty({ type: String, nullable: true }) clearingId: string | null;
  @ApiProperty({ enum: ['DEPOSIT', 'WITHDRAW'] }) type: 'DEPOSIT' | 'WITHDRAW';
  @ApiProperty({ enum: TRANSACTION_STATUSES }) status: string;
  @ApiProperty({ type: InternalPartyDto }) account: InternalPartyDto;
  @ApiProperty({ type: CounterPartyDto }) counterParty: CounterPartyDto;
  @ApiProperty({ type: AmountDto }) amount: AmountDto;
  @ApiProperty() currency: string;
  @ApiProperty({ enum: ['DEPOSIT', 'WITHDRAW'] }) movementType: 'DEPOSIT' | 'WITHDRAW';
  @ApiProperty({ enum: CONCEPTS }) concept: string;
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
