import { Body, Controller, HttpCode, Post } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { AuthClient } from '#common/auth/auth.decorator.js';
import { ApiNotFound, ErrorResponses } from '#common/http/openapi.js';
import { CounterpartyService } from './counterparty.service.js';
import { CounterpartyRequestDto, CounterpartyResponseDto } from './dto/counterparty.dto.js';

@ApiTags('Transfers')
@Controller('counterparty')
@ErrorResponses()
export class CounterpartyController {
  constructor(private readonly counterparties: CounterpartyService) {}

  @Post()
  @AuthClient()
  @HttpCode(200)
  @ApiOperation({
    summary: 'Who is behind an alias or a CBU/CVU (this service’s accounts and other institutions’)',
    operationId: 'lookupCounterparty',
  })
  @ApiOkResponse({ type: CounterpartyResponseDto })
  @ApiNotFound('Unknown alias or number (detail.item names it)')
  async lookup(@Body() body: CounterpartyRequestDto): Promise<CounterpartyResponseDto> {
    const found = await this.counterparties.lookup(body.destinatario);
    return {
      cvu: found.cvu,
      cbu: found.cbu,
      tipo: found.tipo,
      titulares: found.titulares,
      entidadBancaria: found.entidadBancaria,
      moneda: found.moneda,
    };
  }
}
