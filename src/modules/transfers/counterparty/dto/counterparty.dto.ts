import { ApiProperty, ApiSchema } from '@nestjs/swagger';
import { IsNotEmpty, IsString } from 'class-validator';
import { sharedType } from '#common/http/openapi.js';
import { MaxLength } from '#common/http/validators.js';

/** CounterpartyRequest. */
@ApiSchema({ name: 'CounterpartyRequest' })
export class CounterpartyRequestDto {
  @ApiProperty({
    description: 'the alias, or the 22-digit CBU/CVU, of the counterparty',
    example: 'luna.mate.rio',
  })
  @MaxLength(40)
  @IsNotEmpty()
  @IsString()
  destinatario: string;
}

/** CounterpartyResponse (a); the service answers an unknown alias or number 404, never (b). */
@ApiSchema({ name: 'CounterpartyResponse' })
export class CounterpartyResponseDto {
  @ApiProperty({ description: 'the CVU, or empty for a bank account' }) cvu: string;
  @ApiProperty({ description: 'the CBU, or empty for a CVU' }) cbu: string;
  @ApiProperty({ enum: ['CA', 'CC'], description: 'CA caja de ahorro, CC cuenta corriente' }) tipo:
    'CA' | 'CC';
  @ApiProperty({ description: 'the holder' }) titulares: string;
  @ApiProperty() entidadBancaria: string;
  @ApiProperty(sharedType('CurrencyCode')) moneda: string;
}
