import { ApiProperty } from '@nestjs/swagger';
import { IsIn, IsNotEmpty, IsString } from 'class-validator';
import { IsCountryCode, IsRequiredNested, MaxLength } from '#common/http/validators.js';
import { LegalAddressDto } from '#modules/kyc/dto/legal-address.dto.js';

export const COMPANY_TAX_TYPES = ['CUIT', 'CNPJ', 'cuit', 'cnpj'] as const;
export const COMPANY_TAX_CONDITIONS = ['VAT_REGISTERED', 'OTHERS', 'vatRegistered', 'others'] as const;

/** CreateCompanyRequest (closed, all required). */
export class CreateCompanyDto {
  @ApiProperty({ maxLength: 200 }) @MaxLength(200) @IsNotEmpty() @IsString() name: string;
  @ApiProperty({ maxLength: 200 }) @MaxLength(200) @IsNotEmpty() @IsString() legalName: string;
  @ApiProperty({ maxLength: 200 }) @MaxLength(200) @IsNotEmpty() @IsString() tradeName: string;
  @ApiProperty({ maxLength: 100, example: 'SRL' })
  @MaxLength(100)
  @IsNotEmpty()
  @IsString()
  companyType: string;

  @ApiProperty({ enum: ['CUIT', 'CNPJ'], description: 'case-insensitive' })
  @IsIn(COMPANY_TAX_TYPES)
  @IsString()
  taxType: string;

  @ApiProperty({ description: 'CUIT (11 digits, prefix 30/33/34) or CNPJ (14 digits); valid check digits' })
  @MaxLength(20)
  @IsNotEmpty()
  @IsString()
  taxValue: string;

  @ApiProperty({ enum: ['VAT_REGISTERED', 'OTHERS'], description: 'also accepted: vatRegistered, others' })
  @IsIn(COMPANY_TAX_CONDITIONS)
  @IsString()
  taxCondition: string;

  @ApiProperty({ description: 'ISO 3166-1 alpha-2', example: 'AR' })
  @IsCountryCode()
  operationCountry: string;

  @ApiProperty({ type: LegalAddressDto })
  @IsRequiredNested(() => LegalAddressDto)
  legalAddress: LegalAddressDto;
}

export class TaxInformationDto {
  @ApiProperty({ enum: ['CUIT', 'CNPJ'] }) type: 'CUIT' | 'CNPJ';
  @ApiProperty() value: string;
  @ApiProperty({ enum: ['VAT_REGISTERED', 'OTHERS'] }) condition: 'VAT_REGISTERED' | 'OTHERS';
}

/** Company (the response field is spelled taxInfomation, as the interface spells it). */
export class CompanyResponseDto {
  @ApiProperty({ format: 'uuid' }) uuid: string;
  @ApiProperty() name: string;
  @ApiProperty() legalName: string;
  @ApiProperty({ type: TaxInformationDto }) taxInfomation: TaxInformationDto;
  @ApiProperty({ type: LegalAddressDto }) legalAddress: LegalAddressDto;
}
