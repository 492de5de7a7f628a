import { ApiProperty } from '@nestjs/swagger';
import { IsIn, IsOptional, IsString } from 'class-validator';
import { MaxLength } from '#common/http/validators.js';
import { PageQueryDto } from '#common/http/pagination.js';
import { WEBHOOK_EVENTS } from '../webhook-events.js';

export const EVENT_TYPES = Object.values(WEBHOOK_EVENTS);

/** `GET /v1/events?type=&after=&limit=` (`cursor` is accepted too, as on every list route; documented on the route). */
export class EventsQueryDto extends PageQueryDto {
  @IsOptional()
  @IsIn(EVENT_TYPES)
  @IsString()
  type?: string;

  @IsOptional()
  @MaxLength(200)
  @IsString()
  after?: string;
}

/** Where the event's webhook stands. */
export class EventDeliveryDto {
  @ApiProperty({
    enum: ['pending', 'delivered', 'failed'],
    description:
      'pending: not yet acknowledged, attempts go on; delivered: the receiver answered 2xx; failed: every attempt failed',
  })
  state: 'pending' | 'delivered' | 'failed';

  @ApiProperty({ description: 'attempts made (since the last replay)', minimum: 0 }) attempts: number;

  @ApiProperty({
    format: 'date-time',
    nullable: true,
    type: String,
    description: 'when the last attempt started',
  })
  lastAttemptAt: string | null;

  @ApiProperty({ format: 'date-time', nullable: true, type: String }) deliveredAt: string | null;
}

/** An event of the feed: the payload its webhook signs (`event`, `timestamp`, `data`), its id and delivery. */
export class EventResponseDto {
  @ApiProperty({ format: 'uuid', description: 'the Webhook-Id its deliveries carry' }) id: string;
  @ApiProperty({ enum: EVENT_TYPES }) event: string;
  @ApiProperty({ description: 'seconds since the epoch, when the event happened' }) timestamp: number;
  @ApiProperty({ type: 'object', additionalProperties: true, description: "the webhook payload's data" })
  data: Record<string, unknown>;
  @ApiProperty({ type: EventDeliveryDto }) delivery: EventDeliveryDto;
}
