import { ApiProperty, ApiSchema } from '@nestjs/swagger';
import { IsString, Matches } from 'class-validator';
import { Length } from '#common/http/validators.js';

/** SMSSendRequest (closed). */
@ApiSchema({ name: 'SMSSendRequest' })
export class SmsSendRequestDto {
  @ApiProperty({
    description: 'Destination number: exactly 12 digits (country code and national number, no +)',
    pattern: '^[0-9]{12}$',
    example: '541123456789',
  })
  @Matches(/^[0-9]{12}$/, { message: 'dnis must be exactly 12 digits' })
  @IsString()
  dnis: string;

  @ApiProperty({
    description:
      'Text to send, 1 to 64 characters (Unicode code points). GSM 7-bit when it fits the GSM 03.38 alphabet, else UCS2.',
    minLength: 1,
    maxLength: 64,
    example: 'Your code is 123456',
  })
  @Length(1, 64)
  @IsString()
  message: string;
}

/** SMSSendResponse. */
@ApiSchema({ name: 'SMSSendResponse' })
export class SmsSendResponseDto {
  @ApiProperty({ description: 'Id of the message in this service (uuid)', format: 'uuid' })
  message_id: string;
}

/** SMSStatusResponse. */
@ApiSchema({ name: 'SMSStatusResponse' })
export class SmsStatusResponseDto {
  @ApiProperty({
    description:
      'QUEUED (accepted, waiting for the provider), ENROUTE (the provider has it), REJECTD (refused by the provider), ' +
      'or the stat of the delivery receipt as the provider sent it (DELIVRD, UNDELIV, EXPIRED, …; an open set)',
    example: 'DELIVRD',
  })
  status: string;

  @ApiProperty({
    description:
      "When the network delivered it (the done date of the DELIVRD receipt, RFC 3339); '' until the SMSC reports a delivery",
    example: '2026-11-23T10:15:00.000Z',
  })
  delivery_time: string;

  @ApiProperty({
    description: "MCC+MNC of the serving network when the provider reports it; '' otherwise",
    example: '',
  })
  mccmnc: string;

  @ApiProperty({
    description: "The receipt's err, or the SMPP command_status of a refused submission (0x…); '' before",
    example: '000',
  })
  error_code: string;

  @ApiProperty({
    description: "When this service recorded the receipt (RFC 3339); '' before",
    example: '2026-11-23T10:15:01.234Z',
  })
  system_delivery_time: string;
}

/** SMSStatusNotFoundResponse: an id this application (or this user) never sent. */
@ApiSchema({ name: 'SMSStatusNotFoundResponse' })
export class SmsStatusNotFoundResponseDto {
  @ApiProperty({ enum: ['UNKNOWN'], example: 'UNKNOWN' })
  status: string;

  @ApiProperty({ enum: [''], example: '' })
  delivery_time: string;

  @ApiProperty({ enum: [''], example: '' })
  mccmnc: string;
}
