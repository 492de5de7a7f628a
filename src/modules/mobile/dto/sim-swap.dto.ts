import { ApiProperty, ApiSchema } from '@nestjs/swagger';
import { IsString, Matches } from 'class-validator';

/** SimSwapRequest (closed). */
@ApiSchema({ name: 'SimSwapRequest' })
export class SimSwapRequestDto {
  @ApiProperty({
    description: 'Phone number: exactly 12 digits (country code and national number, no +)',
    pattern: '^[0-9]{12}$',
    example: '541123456789',
  })
  @Matches(/^[0-9]{12}$/, { message: 'phoneNumber must be exactly 12 digits' })
  @IsString()
  phoneNumber: string;
}

@ApiSchema({ name: 'SimSwapResponse' })
export class SimSwapResponseDto {
  @ApiProperty({
    description:
      'Whether the SIM was swapped within the configured maximum age (CAMARA_MAX_AGE_HOURS, default 240): ' +
      '"The SIM card of this phone number was swapped within the last 240 hours." or "… was not swapped …"',
    example: 'The SIM card of this phone number was not swapped within the last 240 hours.',
  })
  message: string;
}
