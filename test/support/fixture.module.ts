import { Body, Controller, Get, HttpCode, Module, Param, ParseUUIDPipe, Post } from '@nestjs/common';
import { Type } from 'class-transformer';
import {
  IsDefined,
  IsIn,
  IsInt,
  IsNotEmpty,
  IsObject,
  IsOptional,
  IsString,
  Min,
  ValidateNested,
} from 'class-validator';
import { AuthClient, AuthEither, Public } from '../../src/common/auth/auth.decorator.js';
import { CurrentPrincipal, type Principal } from '../../src/common/auth/principal.js';
import { assertReachable } from '../../src/common/auth/tenancy.js';
import { ForbiddenError, ValidationFailedError } from '../../src/common/errors/domain-errors.js';
import { UseErrorStyle } from '../../src/common/errors/error-style.js';
import { Length } from '../../src/common/http/validators.js';

/**
 * Routes that exist only in the test suite, to drive the error filter and the
 * guards before feature routes exist. They use the same decorators, guard,
 * pipe and filter as every real route.
 */
class AddressDto {
  @IsString() @IsNotEmpty() streetName: string;
  @IsString() @Length(4, 8) zipCode: string;
}

export class EchoDto {
  @IsString() @IsNotEmpty() name: string;
  @IsInt() @Min(1) count: number;
  @IsIn(['a', 'b']) kind: string;
  @IsDefined() @IsObject() @ValidateNested() @Type(() => AddressDto) address: AddressDto;
  @IsOptional() @IsString() note?: string;
}

/** Resources the fixtures pretend to store: uuid → tenant and owner. */
export const FIXTURE_RESOURCES = new Map<string, { appId: string; ownerIds: string[] }>();

/** Who the guard authenticated, without the request it acts in (id and route, for the audit trail). */
function identityOf(principal: Principal): Principal {
  const { request: _request, ...identity } = principal;
  return identity;
}

@Controller('test-fixtures')
export class FixtureController {
  @Post('echo')
  @AuthEither()
  @HttpCode(200)
  echo(
    @Body() body: EchoDto,
    @CurrentPrincipal() principal: Principal,
  ): { body: EchoDto; principal: Principal } {
    return { body, principal: identityOf(principal) };
  }

  @Get('cc-only')
  @AuthClient()
  ccOnly(@CurrentPrincipal() principal: Principal): Principal {
    return identityOf(principal);
  }

  @Get('resources/:uuid')
  @AuthEither()
  resource(
    @Param('uuid', ParseUUIDPipe) uuid: string,
    @CurrentPrincipal() principal: Principal,
  ): { uuid: string } {
    assertReachable(principal, FIXTURE_RESOURCES.get(uuid), uuid, 'Resource not found');
    return { uuid };
  }

  @Get('forbidden')
  @Public()
  forbidden(): never {
    throw new ForbiddenError('INVALID_STATE', 'The resource is in a state that does not allow this');
  }

  @Get('duplicate')
  @Public()
  duplicate(): never {
    throw ValidationFailedError.single('taxId', 'duplicate', 'taxId is already registered');
  }

  @Get('crash')
  @Public()
  crash(): never {
    throw new Error('relation "secret_table" does not exist at character 42');
  }

  @Post('text')
  @Public()
  @UseErrorStyle('text')
  @HttpCode(200)
  text(@Body() body: EchoDto): { ok: true; name: string } {
    return { ok: true, name: body.name };
  }
}

@Module({ controllers: [FixtureController] })
export class FixtureModule {}
