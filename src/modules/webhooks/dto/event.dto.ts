import { ApiExtraModels, ApiProperty, ApiSchema, getSchemaPath } from '@nestjs/swagger';
import { schemaRef } from '#common/http/openapi.js';
import { IsIn, IsOptional, IsString } from 'class-validator';
import { MaxLength } from '#common/http/validators.js';
import { PageQueryDto } from '#common/http/pagination.js';
import { TRANSFER_UPDATE_STATUSES, WEBHOOK_EVENTS } from '../webhook-events.js';

export const EVENT_TYPES = Object.values(WEBHOOK_EVENTS);
export const EVENT_TYPE_ENUM = { enum: EVENT_TYPES, enumName: 'EventType' };

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
@ApiSchema({ name: 'EventDelivery' })
export class EventDeliveryDto {
  @ApiProperty({
    enum: ['pending', 'delivered', 'failed'],
    description:
      'pending: not yet acknowledged, attempts go on; delivered: the receiver answered 2xx; failed: every attempt failed',
  })
  state: 'pending' | 'delivered' | 'failed';

  @ApiProperty({ type: 'integer', description: 'attempts made (since the last replay)', minimum: 0 })
  attempts: number;

  @ApiProperty({
    format: 'date-time',
    nullable: true,
    type: String,
    description:
      'when the last attempt started, once recorded; null when none was made. A replay keeps the time of the attempt before it',
  })
  lastAttemptAt: string | null;

  @ApiProperty({ format: 'date-time', nullable: true, type: String }) deliveredAt: string | null;
}

/** An event of the feed: the payload its webhook signs (`event`, `timestamp`, `data`), its id and delivery. */
export class EventResponseDto {
  id: string;
  event: string;
  timestamp: number;
  data: Record<string, unknown>;
  delivery: EventDeliveryDto;
}

/** What every event of the feed has besides its `event` and `data`. */
abstract class WebhookEventBase {
  @ApiProperty({ format: 'uuid', description: 'the Webhook-Id its deliveries carry' }) id: string;
  @ApiProperty({ type: 'integer', description: 'seconds since the epoch, when the event happened' })
  timestamp: number;
  @ApiProperty({ type: EventDeliveryDto }) delivery: EventDeliveryDto;
}

/** backStatus and newStatus of transfer_update. */
const TRANSFER_UPDATE_STATUS_ENUM = { enum: [...TRANSFER_UPDATE_STATUSES], enumName: 'TransferUpdateStatus' };

@ApiSchema({ name: 'TransferUpdateData', description: 'The data of transfer_update' })
export class TransferUpdateDataDto {
  @ApiProperty({ format: 'uuid', description: 'the transfer' }) uuid: string;
  @ApiProperty(schemaRef('MovementType')) movementType: string;
  @ApiProperty({ ...TRANSFER_UPDATE_STATUS_ENUM, description: 'the previous status' }) backStatus: string;
  @ApiProperty({ ...TRANSFER_UPDATE_STATUS_ENUM, description: 'the new status' }) newStatus: string;
}

@ApiSchema({ name: 'KycSteepUpdateData', description: 'The data of kyc_steep_update (steep spelled so)' })
export class KycSteepUpdateDataDto {
  @ApiProperty({ format: 'uuid', description: 'the KYC session' }) session: string;
  @ApiProperty({ ...schemaRef('KycStep'), description: 'the step' }) steep: string;
  @ApiProperty({ ...schemaRef('KycStepStatus'), description: 'the previous status (PENDING)' })
  backStatus: string;
  @ApiProperty({ ...schemaRef('KycStepStatus'), description: 'the verdict: SUCCESS or FAILED' })
  newStatus: string;
}

@ApiSchema({ name: 'WebhookTestData', description: 'The data of webhook_test' })
export class WebhookTestDataDto {
  @ApiProperty() message: string;
}

@ApiSchema({ name: 'TransferUpdateEvent' })
export class TransferUpdateEventDto extends WebhookEventBase {
  @ApiProperty({ enum: [WEBHOOK_EVENTS.transferUpdate] }) event: string;
  @ApiProperty({ type: TransferUpdateDataDto }) data: TransferUpdateDataDto;
}

@ApiSchema({ name: 'KycSteepUpdateEvent' })
export class KycSteepUpdateEventDto extends WebhookEventBase {
  @ApiProperty({ enum: [WEBHOOK_EVENTS.kycStepUpdate] }) event: string;
  @ApiProperty({ type: KycSteepUpdateDataDto }) data: KycSteepUpdateDataDto;
}

@ApiSchema({ name: 'WebhookTestEvent' })
export class WebhookTestEventDto extends WebhookEventBase {
  @ApiProperty({ enum: [WEBHOOK_EVENTS.test] }) event: string;
  @ApiProperty({ type: WebhookTestDataDto }) data: WebhookTestDataDto;
}

const EVENT_SCHEMAS = {
  [WEBHOOK_EVENTS.transferUpdate]: TransferUpdateEventDto,
  [WEBHOOK_EVENTS.kycStepUpdate]: KycSteepUpdateEventDto,
  [WEBHOOK_EVENTS.test]: WebhookTestEventDto,
};

/** An event of the feed: one of the three, told apart by `event`. */
export const WebhookEvents = () => ApiExtraModels(...Object.values(EVENT_SCHEMAS));

export const WEBHOOK_EVENT_SCHEMA = {
  oneOf: Object.values(EVENT_SCHEMAS).map((type) => ({ $ref: getSchemaPath(type) })),
  discriminator: {
    propertyName: 'event',
    mapping: Object.fromEntries(
      Object.entries(EVENT_SCHEMAS).map(([event, type]) => [event, getSchemaPath(type)]),
    ),
  },
};
