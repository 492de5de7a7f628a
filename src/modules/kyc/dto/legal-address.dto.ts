import { ApiProperty } from '@nestjs/swagger';
import { IsNotEmpty, IsString } from 'class-validator';
import { IsCountryCode, MaxLength } from '#common/http/validators.js';

/** LegalAddress: all nine fields required (closed). */
export class LegalAddressDto {
  @ApiProperty({ maxLength: 200 }) @MaxLength(200) @IsNotEmpty() @IsString() streetName: string;
  @ApiProperty({ maxLength: 20 }) @MaxLength(20) @IsNotEmpty() @IsString() streetNumber: string;
  @ApiProperty({ maxLength: 20, description: 'may be empty' }) @MaxLength(20) @IsString() floor: string;
  @ApiProperty({ maxLength: 20, description: 'may be empty' }) @MaxLength(20) @IsString() apartment: string;
  @ApiProperty({ maxLength: 20 }) @MaxLength(20) @IsNotEmpty() @IsString() zipCode: string;
  @ApiProperty({ maxLength: 100 }) @MaxLength(100) @IsNotEmpty() @IsString() neighborhood: string;
  @ApiProperty({ maxLength: 100 }) @MaxLength(100) @IsNotEmpty() @IsString() city: string;
  @ApiProperty({ maxLength: 100 }) @MaxLength(100) @IsNotEmpty() @IsString() region: string;
  @ApiProperty({ description: 'ISO 3166-1 alpha-2', example: 'AR' }) @IsCountryCode() country: string;
}

export type LegalAddress = {
  [K in keyof LegalAddressDto]: string;
};
