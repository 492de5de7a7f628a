import { ApiProperty, ApiSchema } from '@nestjs/swagger';
import { OWNER_TYPE_ENUM } from '../dto/owner-enums.js';

@ApiSchema({ name: 'KycHistoryEntry' })
export class KycHistoryEntryDto {
  @ApiProperty() id: string;
  @ApiProperty(OWNER_TYPE_ENUM) ownerType: string;
  @ApiProperty({ format: 'uuid' }) ownerId: string;
  @ApiProperty({ description: 'company section, or kycData for a user' }) section: string;
  @ApiProperty({
    type: 'object',
    additionalProperties: true,
    nullable: true,
    description: 'the value before the change (null: there was none)',
  })
  previous: unknown;
  @ApiProperty({ type: 'object', additionalProperties: true, description: 'the value after the change' })
  current: unknown;
  @ApiProperty({ description: 'client:<appId> or subject:<uuid>' }) actor: string;
  @ApiProperty({ format: 'date-time' }) at: string;
}
