import { Controller, Get, Param, Query } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiQuery, ApiTags } from '@nestjs/swagger';
import { AuthClient } from '#common/auth/auth.decorator.js';
import { CurrentPrincipal, type Principal } from '#common/auth/principal.js';
import { ErrorResponses } from '#common/http/openapi.js';
import { CURSOR_SCHEMA, Paginated, type Page } from '#common/http/pagination.js';
import {
  EVENT_TYPE_ENUM,
  EventResponseDto,
  EventsQueryDto,
  WEBHOOK_EVENT_SCHEMA,
  WebhookEvents,
} from './dto/event.dto.js';
import { EventsFeedService } from './events-feed.service.js';
import { UuidPipe } from '#common/http/uuid.pipe.js';

@ApiTags('Events')
@Controller('events')
@ErrorResponses()
@WebhookEvents()
export class EventsFeedController {
  constructor(private readonly feed: EventsFeedService) {}

  @Get()
  @AuthClient()
  @Paginated()
  @ApiOperation({
    summary: "The application's events, oldest first: what its webhooks carry, with id and delivery state",
    operationId: 'listEvents',
  })
  @ApiQuery({ name: 'type', required: false, ...EVENT_TYPE_ENUM, description: 'only events of this name' })
  @ApiQuery({
    name: 'after',
    required: false,
    description: 'the X-Next-Cursor of the previous page (the same as `cursor`)',
    schema: CURSOR_SCHEMA,
  })
  @ApiOkResponse({ description: 'A page of events', schema: { type: 'array', items: WEBHOOK_EVENT_SCHEMA } })
  list(
    @CurrentPrincipal() principal: Principal,
    @Query() query: EventsQueryDto,
  ): Promise<Page<EventResponseDto>> {
    return this.feed.list(principal.appId, query);
  }

  @Get(':uuid')
  @AuthClient()
  @ApiOperation({
    summary: 'One event of the application (its id is the Webhook-Id)',
    operationId: 'getEvent',
  })
  @ApiOkResponse({ description: 'The event', schema: WEBHOOK_EVENT_SCHEMA })
  get(
    @CurrentPrincipal() principal: Principal,
    @Param('uuid', UuidPipe) uuid: string,
  ): Promise<EventResponseDto> {
    return this.feed.get(principal.appId, uuid);
  }
}
