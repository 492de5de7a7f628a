import { ApiProperty, ApiSchema } from '@nestjs/swagger';
import { IsNotEmpty, IsString } from 'class-validator';
import { sharedType } from '#common/http/openapi.js';
import { IsCountryCode, MaxLength } from '#common/http/validators.js';

/** LegalAddress: all nine fields required (closed). */
@ApiSchema({ name: 'LegalAddress' })
export class LegalAddressDto {
  @ApiProperty({ maxLength: 200 }) @MaxLength(200) @IsNotEmpty() @IsString() streetName: string;
  @ApiProperty({ maxLength: 20 }) @MaxLength(20) @IsNotEmpty() @IsString() streetNumber: string;
  @ApiProperty({ maxLength: 20, description: 'may be empty' }) @MaxLength(20) @IsString() floor: string;
  @ApiProperty({ maxLength: 20, description: 'may be empty' }) @MaxLength(20) @IsString() apartment: string;
  @ApiProperty({ maxLength: 20 }) @MaxLength(20) @IsNotEmpty() @IsString() zipCode: string;
  @ApiProperty({ maxLength: 100 }) @MaxLength(100) @IsNotEmpty() @IsString() neighborhood: string;
  @ApiProperty({ maxLength: 100 }) @MaxLength(100) @IsNotEmpty() @IsString() city: string;
  @ApiProperty({ maxLength: 100 }) @MaxLength(100) @IsNotEmpty() @IsString() region: string;
  @ApiProperty(sharedType('CountryCode')) @IsCountryCode() country: string;
}

export type LegalAddress = {
  [K in keyof LegalAddressDto]: string;
};
