import { ApiProperty, ApiSchema } from '@nestjs/swagger';
import { IsIn, IsNotEmpty, IsString } from 'class-validator';
import { IsCountryCode, IsNotBlank, IsRequiredNested, MaxLength } from '#common/http/validators.js';
import { sharedType } from '#common/http/openapi.js';
import { LegalAddressDto } from '#modules/kyc/dto/legal-address.dto.js';
import { TAX_CONDITION_ENUM } from '#modules/kyc/dto/owner-enums.js';

export const COMPANY_TAX_TYPES = ['CUIT', 'CNPJ', 'cuit', 'cnpj'] as const;
export const COMPANY_TAX_CONDITIONS = ['VAT_REGISTERED', 'OTHERS', 'vatRegistered', 'others'] as const;
const TAX_TYPE_ENUM = { enum: ['CUIT', 'CNPJ'], enumName: 'TaxType' };

/** CreateCompanyRequest (closed, all required). */
@ApiSchema({ name: 'CreateCompanyRequest' })
export class CreateCompanyDto {
  @ApiProperty({ maxLength: 200 }) @MaxLength(200) @IsNotBlank() @IsString() name: string;
  @ApiProperty({ maxLength: 200 }) @MaxLength(200) @IsNotBlank() @IsString() legalName: string;
  @ApiProperty({ maxLength: 200 }) @MaxLength(200) @IsNotBlank() @IsString() tradeName: string;
  @ApiProperty({ maxLength: 100, example: 'SRL' })
  @MaxLength(100)
  @IsNotBlank()
  @IsString()
  companyType: string;

  @ApiProperty({ ...TAX_TYPE_ENUM, description: 'case-insensitive' })
  @IsIn(COMPANY_TAX_TYPES)
  @IsString()
  taxType: string;

  @ApiProperty({
    description:
      'CUIT (11 digits, prefix 30/33/34) or CNPJ (14 characters: 12 letters or digits, the form issued from July 2026, then 2 check digits); valid check digits',
  })
  @MaxLength(20)
  @IsNotEmpty()
  @IsString()
  taxValue: string;

  @ApiProperty({ ...TAX_CONDITION_ENUM, description: 'also accepted: vatRegistered, others' })
  @IsIn(COMPANY_TAX_CONDITIONS)
  @IsString()
  taxCondition: string;

  @ApiProperty(sharedType('CountryCode'))
  @IsCountryCode()
  operationCountry: string;

  @ApiProperty({ type: LegalAddressDto })
  @IsRequiredNested(() => LegalAddressDto)
  legalAddress: LegalAddressDto;
}

@ApiSchema({ name: 'TaxInformation' })
export class TaxInformationDto {
  @ApiProperty(TAX_TYPE_ENUM) type: 'CUIT' | 'CNPJ';
  @ApiProperty() value: string;
  @ApiProperty(TAX_CONDITION_ENUM) condition: 'VAT_REGISTERED' | 'OTHERS';
}

/** Company (the response field is spelled taxInfomation, as the interface spells it). */
@ApiSchema({ name: 'Company' })
export class CompanyResponseDto {
  @ApiProperty({ format: 'uuid' }) uuid: string;
  @ApiProperty() name: string;
  @ApiProperty() legalName: string;
  @ApiProperty({ type: TaxInformationDto }) taxInfomation: TaxInformationDto;
  @ApiProperty({ type: LegalAddressDto }) legalAddress: LegalAddressDto;
}
