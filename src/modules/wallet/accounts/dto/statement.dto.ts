import { ApiProperty, ApiSchema } from '@nestjs/swagger';
import { IsOptional, IsString } from 'class-validator';
import { sharedType } from '#common/http/openapi.js';
import { MaxLength } from '#common/http/validators.js';
import { PageQueryDto } from '#common/http/pagination.js';

/** `?from=&to=` (RFC 3339 date-times; checked by the service so the error names the parameter) and the page. */
export class StatementQueryDto extends PageQueryDto {
  @IsOptional()
  @MaxLength(64)
  @IsString()
  from?: string;

  @IsOptional()
  @MaxLength(64)
  @IsString()
  to?: string;
}

/** One posting on the account in the period, with the balance right after it. */
@ApiSchema({ name: 'StatementMovement' })
export class StatementMovementDto {
  @ApiProperty({ description: 'the posting id (ledger order within one instant)', example: '1042' })
  postingId: string;
  @ApiProperty({ format: 'date-time', description: 'when it was posted, UTC, microseconds' })
  postedAt: string;
  @ApiProperty({ description: 'signed: positive raises the balance, negative lowers it' })
  amount: number;
  @ApiProperty({ description: 'the balance right after this movement' })
  balance: number;
  @ApiProperty({ format: 'uuid', description: 'the journal entry it belongs to' })
  entryId: string;
  @ApiProperty({ description: "the entry's kind as the ledger has it (e.g. TRANSFER, ADJUSTMENT)" })
  kind: string;
  @ApiProperty({
    type: String,
    nullable: true,
    description:
      "the entry's reference (a transfer's id, …); for either side of an internal transfer or a reversal, the id of " +
      "this account's own transaction (its WITHDRAW or its DEPOSIT)",
  })
  reference: string | null;
  @ApiProperty({ type: String, nullable: true, description: "the entry's description" })
  description: string | null;
}

/** An account's statement for the period (from, to]: opening at `from`, closing at `to`, the movements between. */
@ApiSchema({ name: 'StatementResponse' })
export class StatementResponseDto {
  @ApiProperty({ format: 'uuid' }) accountId: string;
  @ApiProperty(sharedType('CurrencyCode')) currency: string;
  @ApiProperty({ format: 'date-time', description: 'the period starts after this instant (UTC)' })
  from: string;
  @ApiProperty({
    format: 'date-time',
    description: "the period ends at this instant, included (UTC); without `to`, page 1's now on every page",
  })
  to: string;
  @ApiProperty({ description: 'the balance at `from` (same on every page)' }) openingBalance: number;
  @ApiProperty({ description: 'the balance at `to` (same on every page)' }) closingBalance: number;
  @ApiProperty({ description: 'the sum of the positive movements of the whole period' }) totalIn: number;
  @ApiProperty({ description: 'the sum of the negative movements of the whole period, as a positive number' })
  totalOut: number;
  @ApiProperty({ type: [StatementMovementDto], description: 'this page of the movements, oldest first' })
  movements: StatementMovementDto[];
}

export const STATEMENT_AT_DESCRIPTION =
  'RFC 3339 date-time, e.g. 2026-01-31T23:59:59Z or 2026-01-31T20:59:59.5-03:00';
