import { ApiProperty } from '@nestjs/swagger';

export class KycHistoryEntryDto {
  @ApiProperty() id: string;
  @ApiProperty({ enum: ['USER', 'COMPANY'] }) ownerType: string;
  @ApiProperty({ format: 'uuid' }) ownerId: string;
  @ApiProperty({ description: 'company section, or kycData for a user' }) section: string;
  @ApiProperty({ nullable: true, description: 'the value before the change' }) previous: unknown;
  @ApiProperty({ description: 'the value after the change' }) current: unknown;
  @ApiProperty({ description: 'client:<appId> or subject:<uuid>' }) actor: string;
  @ApiProperty({ format: 'date-time' }) at: string;
}
