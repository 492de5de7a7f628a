import { ApiProperty } from '@nestjs/swagger';
import { IsNotEmpty, IsString, MaxLength } from 'class-validator';

export class TokenRequestDto {
  @ApiProperty({ description: 'The application id (equal to its clientId)', format: 'uuid' })
  @IsString()
  @IsNotEmpty()
  @MaxLength(100)
  appId: string;

  @ApiProperty({ description: 'The client assertion: a JWT signed ES256 with a registered key (RFC 7523)' })
  @IsString()
  @IsNotEmpty()
  @MaxLength(8192)
  token: string;

  @ApiProperty({ enum: ['client_credentials'] })
  @IsString()
  @IsNotEmpty()
  grantType: string;
}

export class TokenResponseDto {
  @ApiProperty({ enum: ['Bearer'] })
  type: 'Bearer';

  @ApiProperty()
  accessToken: string;

  @ApiProperty({ description: 'Lifetime of the access token in seconds' })
  expiresIn: number;
}

export class TokenErrorItemDto {
  @ApiProperty() path: string;
  @ApiProperty() message: string;
  @ApiProperty({ enum: ['required', 'invalid', 'notfound', 'duplicate'] }) type: string;
}

export class TokenErrorDto {
  @ApiProperty({
    description: 'OAuth 2.0 error code (invalid_request, invalid_client, unsupported_grant_type)',
  })
  errorId: string;

  @ApiProperty({ description: 'HTTP status code' })
  code: number;

  @ApiProperty()
  message: string;

  @ApiProperty({ type: [TokenErrorItemDto], required: false, description: 'Present on 400' })
  detail?: TokenErrorItemDto[];
}
