import { ApiProperty, ApiPropertyOptional, ApiSchema } from '@nestjs/swagger';
import { IsNotEmpty, IsNumber, IsOptional, IsString } from 'class-validator';
import { sharedType } from '#common/http/openapi.js';
import { MaxLength } from '#common/http/validators.js';
import { TransactionInfoDto } from './transfer.dto.js';

/** POST /wallet/transactions/{uuid}/reversals (closed). */
@ApiSchema({ name: 'CreateReversalRequest' })
export class CreateReversalDto {
  @ApiPropertyOptional({
    description:
      'in the transfer currency, more than 0, at most what is left to reverse (the default: all of it)',
  })
  @IsOptional()
  @IsNumber({ allowNaN: false, allowInfinity: false })
  amount?: number;

  @ApiProperty({ maxLength: 200, description: "why the money goes back; the new transfer's description" })
  @MaxLength(200)
  @IsNotEmpty()
  @IsString()
  reason: string;
}

/** A reversal or a return from the rail: TransactionInfo of the new transfer, and the row it gives back for. */
@ApiSchema({ name: 'ReversalInfo' })
export class ReversalInfoDto extends TransactionInfoDto {
  @ApiProperty({
    format: 'uuid',
    description:
      "the original transfer of the same account (the receiver's DEPOSIT, or the sender's WITHDRAW)",
  })
  reversalOf: string;
}

/** GET /wallet/transactions/{uuid}/reversals: what was given back for a transfer, and what is left. */
@ApiSchema({ name: 'ReversalsSummary' })
export class ReversalsSummaryDto {
  @ApiProperty({ format: 'uuid' }) uuid: string;
  @ApiProperty({ description: 'the original amount' }) amount: number;
  @ApiProperty(sharedType('CurrencyCode')) currency: string;
  @ApiProperty({ description: 'the sum of the reversals (or returns) so far' }) reversed: number;
  @ApiProperty({
    description:
      'what can still be reversed (or returned by the rail); 0 when the transfer cannot be (a reversal, not ACREDITADO, an inbound deposit)',
  })
  left: number;
  @ApiProperty({ type: [ReversalInfoDto], description: 'oldest first' }) reversals: ReversalInfoDto[];
}
