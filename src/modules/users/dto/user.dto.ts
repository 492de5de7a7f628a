import { ApiExtraModels, ApiProperty, ApiPropertyOptional, ApiSchema } from '@nestjs/swagger';
import { IsBoolean, IsEmail, IsIn, IsNotEmpty, IsOptional, IsString } from 'class-validator';
import {
  IsCountryCode,
  IsNotBlank,
  IsRealDate,
  IsRequiredNested,
  MaxLength,
} from '#common/http/validators.js';
import { nullableRef, sharedType } from '#common/http/openapi.js';
import { LegalAddressDto } from '#modules/kyc/dto/legal-address.dto.js';
import { OWNER_TYPE_ENUM, TAX_CONDITION_ENUM } from '#modules/kyc/dto/owner-enums.js';

export const TAX_ID_TYPES_IN = ['cuil', 'cuit'] as const;
export const TAX_CONDITIONS_IN = ['vatRegistered', 'others'] as const;
export const CATEGORIES_IN = ['consumidorFinal', 'monotributista', 'responsableInscripto'] as const;
export const CIVIL_STATUSES = ['single', 'married', 'divorced'] as const;
export const SEXES = ['male', 'female', 'other'] as const;
export const SEXES_SHORT = ['M', 'F', 'O'] as const;
/** An account's status (AccountInfo, ModifyAccountRequest): one component of the document. */
export const ACCOUNT_STATUS_ENUM = { enum: ['ACTIVE', 'INACTIVE', 'PENDING'], enumName: 'AccountStatus' };
const CIVIL_STATUS_ENUM = { enum: [...CIVIL_STATUSES], enumName: 'CivilStatus' };

/** UserLegalInformationRequest (closed, all required). */
@ApiSchema({ name: 'UserLegalInformationRequest' })
export class UserLegalInformationRequestDto {
  @ApiProperty({ enum: TAX_ID_TYPES_IN })
  @IsIn(TAX_ID_TYPES_IN)
  @IsString()
  taxIdType: (typeof TAX_ID_TYPES_IN)[number];

  @ApiProperty({
    description: 'CUIL/CUIT, 11 digits (separators allowed), valid check digit',
    example: '20-12345678-6',
  })
  @MaxLength(20)
  @IsNotEmpty()
  @IsString()
  taxId: string;

  @ApiProperty({ enum: TAX_CONDITIONS_IN })
  @IsIn(TAX_CONDITIONS_IN)
  @IsString()
  taxCondition: (typeof TAX_CONDITIONS_IN)[number];

  @ApiProperty({ enum: CATEGORIES_IN })
  @IsIn(CATEGORIES_IN)
  @IsString()
  category: (typeof CATEGORIES_IN)[number];

  @ApiProperty() @IsBoolean() taxExempt: boolean;
}

/** CreateUserRequest (closed). */
@ApiSchema({ name: 'CreateUserRequest' })
export class CreateUserDto {
  @ApiProperty({ maxLength: 100 }) @MaxLength(100) @IsNotBlank() @IsString() firstName: string;
  @ApiProperty({ maxLength: 100 }) @MaxLength(100) @IsNotBlank() @IsString() lastName: string;
  @ApiProperty({ format: 'date', example: '1990-04-21' })
  @IsRealDate({ past: true })
  @IsString()
  birthdate: string;
  @ApiProperty({ enum: SEXES }) @IsIn(SEXES) @IsString() sex: (typeof SEXES)[number];
  @ApiProperty(CIVIL_STATUS_ENUM)
  @IsIn(CIVIL_STATUSES)
  @IsString()
  civilStatus: (typeof CIVIL_STATUSES)[number];
  @ApiProperty(sharedType('CountryCode')) @IsCountryCode() nationality: string;

  @ApiProperty({ type: UserLegalInformationRequestDto })
  @IsRequiredNested(() => UserLegalInformationRequestDto)
  legalInformation: UserLegalInformationRequestDto;

  @ApiProperty({ type: LegalAddressDto })
  @IsRequiredNested(() => LegalAddressDto)
  legalAddress: LegalAddressDto;
}

/** UpdateUserRequest: every field optional, names and types as the interface gives them. */
@ApiSchema({ name: 'UpdateUserRequest' })
export class UpdateUserDto {
  @ApiPropertyOptional({ format: 'email' })
  @IsOptional()
  @MaxLength(200)
  @IsEmail()
  @IsString()
  email?: string;
  @ApiPropertyOptional() @IsOptional() @MaxLength(100) @IsNotBlank() @IsString() firstName?: string;
  @ApiPropertyOptional() @IsOptional() @MaxLength(100) @IsNotBlank() @IsString() lastName?: string;
  @ApiPropertyOptional({ format: 'date' })
  @IsOptional()
  @IsRealDate({ past: true })
  @IsString()
  birthday?: string;
  @ApiPropertyOptional({ enum: SEXES_SHORT })
  @IsOptional()
  @IsIn(SEXES_SHORT)
  @IsString()
  sex?: (typeof SEXES_SHORT)[number];
  @ApiPropertyOptional({ format: 'email', description: 'format email, as the interface defines it' })
  @IsOptional()
  @MaxLength(200)
  @IsEmail()
  @IsString()
  legalName?: string;

  @ApiPropertyOptional({ description: 'CUIL/CUIT of the same type as registered' })
  @IsOptional()
  @MaxLength(20)
  @IsNotEmpty()
  @IsString()
  taxId?: string;

  @ApiPropertyOptional(sharedType('CountryCode'))
  @IsOptional()
  @IsCountryCode()
  nationality?: string;
}

@ApiSchema({ name: 'UserLegalInformation' })
export class UserLegalInformationDto {
  @ApiProperty({ enum: ['CUIL', 'CUIT'] }) taxIdType: 'CUIL' | 'CUIT';
  @ApiProperty() taxId: string;
  @ApiProperty(TAX_CONDITION_ENUM) taxCondition: 'VAT_REGISTERED' | 'OTHERS';
  @ApiProperty({ enum: ['Consumidor final', 'Monotributista', 'Responsable inscripto'] }) category: string;
  @ApiProperty() taxExempt: boolean;
}

/** AccountInfo. */
@ApiSchema({ name: 'AccountInfo' })
export class AccountInfoDto {
  @ApiProperty(OWNER_TYPE_ENUM) ownerType: string;
  @ApiProperty({ format: 'uuid' }) uuid: string;
  @ApiProperty(ACCOUNT_STATUS_ENUM) status: string;
  @ApiProperty({ format: 'date-time' }) created: string;
  @ApiProperty({ format: 'date-time' }) updated: string;
  @ApiProperty(sharedType('AccountCXU')) cvu: string;
  @ApiProperty(sharedType('AccountAlias')) alias: string;
  @ApiProperty(sharedType('CurrencyCode')) currency: string;
  @ApiProperty() balance: number;
  @ApiProperty() monthlyDepositOperation: number;
  @ApiProperty() monthlyWithdrawOperation: number;
}

/** User (and CreateUserResponse, which has the same fields). */
@ApiSchema({ name: 'User' })
@ApiExtraModels(AccountInfoDto)
export class UserResponseDto {
  @ApiProperty({ format: 'uuid' }) uuid: string;
  @ApiProperty() firstName: string;
  @ApiProperty() lastName: string;
  @ApiProperty({ format: 'date' }) birthday: string;
  @ApiProperty(CIVIL_STATUS_ENUM) civilStatus: string;
  @ApiProperty({ type: LegalAddressDto }) legalAddress: LegalAddressDto;
  @ApiProperty(nullableRef('AccountInfo', 'object')) account: AccountInfoDto | null;
  @ApiProperty({ type: UserLegalInformationDto }) legalInformation: UserLegalInformationDto;
}
